"""``python -m fabric kubernetes``: print every Kubernetes object railyard derives from a spec
(``orchestrator: kubernetes`` or ``both``): the Network Operator's NicClusterPolicy, its
networks and nv-ipam pools, the Node topology label patches and the Kueue Topology, as one
YAML stream for ``kubectl apply --server-side -f -``. The labels come from the declared fabric,
or from the real one with ``--from-ibnetdiscover``. ``--json``: the same objects in one JSON
document."""

from __future__ import annotations

import argparse
import sys

from fabric.cli.errors import CommandError, Exit, emit_json, positive_mib, read_input
from fabric.cli.options import add_json, add_spec, add_stack, spec_path

_FIX = "pass ibnetdiscover's plain output (a file, or '-' for stdin)"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``kubernetes`` subcommand."""
    parser = subparsers.add_parser(
        "kubernetes",
        help="print the Kubernetes objects of a spec: NicClusterPolicy, networks, topology labels",
        description="Print the NVIDIA Network Operator's NicClusterPolicy, its networks and "
        "nv-ipam pools, the Node topology label patches and the Kueue Topology of a spec whose "
        "orchestrator is kubernetes or both, as one YAML stream (kubectl apply --server-side "
        "-f -). Exit 0, or 2 on a bad spec, a spec without a kubernetes section, or "
        "ibnetdiscover output that cannot be read or is over --max-mb.",
    )
    add_spec(parser)
    add_stack(parser)
    parser.add_argument(
        "--from-ibnetdiscover",
        metavar="FILE",
        help="label the nodes from this discovered fabric ('-' for stdin) instead of the spec's",
    )
    parser.add_argument(
        "--max-mb",
        type=positive_mib,
        default=None,
        metavar="N",
        help="refuse --from-ibnetdiscover input larger than N MiB before reading further "
        "(default 64, as parse)",
    )
    add_json(
        parser,
        'print {"name": CLUSTER, "objects": [...], "warnings": [...]} as one JSON document '
        "instead of YAML; an error too",
    )
    parser.set_defaults(func=cmd_kubernetes)


def cmd_kubernetes(args: argparse.Namespace) -> int:
    """Load the spec, build the objects, print them."""
    from fabric.model.network_operator import network_operator_objects
    from fabric.spec import load_spec
    from fabric.topology.kubernetes import dump_yaml, kueue_topology, node_labels, node_patches

    path = spec_path(args, only_one=True)
    spec = load_spec(path)
    if spec.kubernetes is None:
        raise CommandError(
            f"{path}: orchestrator is {spec.orchestrator!r} and no kubernetes section is given; "
            "set orchestrator: kubernetes (or both) and a kubernetes section"
        )
    if args.from_ibnetdiscover:
        from fabric.parsers.ibnetdiscover import parse

        graph = parse(read_input(args.from_ibnetdiscover, _FIX, args.max_mb or 0).text)
    else:
        from fabric.topology.from_spec import graph_from_spec

        graph = graph_from_spec(spec)
    settings = spec.kubernetes.labels
    labels = node_labels(graph, settings.scheme)
    for warning in labels.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    docs = [
        *network_operator_objects(spec),
        node_patches(labels),
        kueue_topology(labels, settings.kueue_topology or spec.name),
    ]
    if args.json:
        emit_json({"name": spec.name, "objects": docs, "warnings": list(labels.warnings)})
        return Exit.OK
    sys.stdout.write(
        f"# Kubernetes objects of {spec.name}, written by railyard\n" + dump_yaml(docs)
    )
    return Exit.OK
