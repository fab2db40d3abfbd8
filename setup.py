"""Build hook for the optional compiled ibnetdiscover scanner (metadata lives in pyproject.toml).

``optional=True``: without a C compiler the install still succeeds and the parser uses its
pure-Python scanner (same results, slower; see bench/topology/README.md).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "fabric.parsers.ibnetdiscover._ibnetdiscover_scan",
            ["fabric/parsers/ibnetdiscover/_ibnetdiscover_scan.c"],
            extra_compile_args=["-O2", "-Wall", "-Wextra"],
            optional=True,
        )
    ]
)
