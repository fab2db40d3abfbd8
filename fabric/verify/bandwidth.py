"""Minimum ``ib_write_bw`` bandwidth per link rate (real hardware only)."""

from __future__ import annotations

#: Link rate (Gb/s, as ibstat reports it) -> minimum ib_write_bw average (Gb/s) between two
#: hosts on an idle fabric: ~90% of the signalling rate after 64b/66b encoding (EDR and up;
#: 8b/10b costs 20% for SDR-QDR) and headers.
MIN_WRITE_BW_GBPS: dict[int, float] = {
    10: 7.0,  # 4xSDR
    20: 14.0,  # 4xDDR
    40: 28.0,  # 4xQDR
    56: 45.0,  # 4xFDR
    100: 88.0,  # 4xEDR / 100GbE
    200: 180.0,  # 4xHDR / 200GbE
    400: 360.0,  # 4xNDR / 400GbE
    800: 720.0,  # 4xXDR / 800GbE
}


def min_write_bw(rate_gbps: float) -> float:
    """Return the minimum ib_write_bw Gb/s for a link of ``rate_gbps`` (next lower table row)."""
    rows = [r for r in sorted(MIN_WRITE_BW_GBPS) if r <= rate_gbps]
    if not rows:
        raise ValueError(
            f"no bandwidth floor for a {rate_gbps} Gb/s link; lowest row is {min(MIN_WRITE_BW_GBPS)}"
        )
    return MIN_WRITE_BW_GBPS[rows[-1]]
