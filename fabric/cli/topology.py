"""``python -m fabric topology``: print the Slurm topology (or ibsim net, or oversubscription)
of a declared fabric (``--from-spec``) or a discovered one (``--from-ibnetdiscover``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fabric.topology.render import only_hosts
from fabric.hostlist import expand
from fabric.parsers.common import ParseError
from fabric.parsers.ibnetdiscover import parse
from fabric.specload import SpecError, load_spec
from fabric.topology.from_spec import graph_from_spec
from fabric.topology.graph import FabricGraph, GraphError
from fabric.topology.ibsim import render_net
from fabric.topology.slurm import block_conf, topology_yaml, tree_conf


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``topology`` subcommand."""
    parser = subparsers.add_parser(
        "topology",
        help="print Slurm topology.conf / topology.yaml from a spec or ibnetdiscover output",
        description="Print the Slurm topology of a fabric. Hosts cabled to several leaves "
        "(rail-optimized) are placed under their rail-0 leaf (see fabric.topology.slurm).",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--from-ibnetdiscover", metavar="FILE", help="ibnetdiscover output ('-' for stdin)")
    source.add_argument("--from-spec", metavar="SPEC", help="cluster spec YAML or Pulumi stack file")
    parser.add_argument("--plugin", choices=("tree", "block", "yaml"), default="tree",
                        help="topology.conf for topology/tree (default) or topology/block, or topology.yaml")
    parser.add_argument("--block-size", type=int, metavar="N", help="BlockSizes base (block and yaml)")
    parser.add_argument("--nodes", metavar="HOSTLIST",
                        help="keep only these hosts (the Slurm nodes), e.g. gpu[01-08]: Slurm refuses a "
                        "topology.conf naming a host slurm.conf does not; leaves left without one are dropped")
    parser.add_argument("--ibsim-net", action="store_true", help="print an ibsim net file instead")
    parser.add_argument("--oversubscription", action="store_true",
                        help="print each leaf's down/up bandwidth and ratio instead")
    parser.set_defaults(func=run)


def _graph(args: argparse.Namespace) -> FabricGraph:
    if args.from_spec:
        return graph_from_spec(load_spec(args.from_spec))
    source = args.from_ibnetdiscover
    text = sys.stdin.read() if source == "-" else Path(source).read_text()
    return parse(text)


def run(args: argparse.Namespace) -> int:
    """Build the graph, print the chosen output; 1 on a bad input, 2 on an unreadable file."""
    if args.block_size is not None and args.block_size < 1:
        print("topology: --block-size must be 1 or more", file=sys.stderr)
        return 2
    try:
        graph = _graph(args)
        if args.nodes is not None:
            graph = only_hosts(graph, expand(args.nodes))
        if args.ibsim_net:
            out = render_net(graph)
        elif args.oversubscription:
            out = "".join(
                f"{load.switch}\tdown {load.down_gbps:g} Gb/s\tup {load.up_gbps:g} Gb/s\t"
                f"{'no uplinks' if load.oversubscription is None else f'{load.oversubscription:.2f}:1'}\n"
                for load in graph.leaf_loads()
            )
        elif args.plugin == "tree":
            out = tree_conf(graph)
        elif args.plugin == "block":
            out = block_conf(graph, args.block_size)
        else:
            out = topology_yaml(graph, args.block_size)
    except OSError as err:
        print(f"topology: cannot read {err.filename}: {err.strerror}", file=sys.stderr)
        return 2
    except SpecError as err:
        print(f"topology: {args.from_spec}: {err}", file=sys.stderr)
        return 1
    except (ParseError, GraphError, ValueError) as err:
        print(f"topology: {err}", file=sys.stderr)
        return 1
    sys.stdout.write(out)
    return 0
