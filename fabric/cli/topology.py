"""``python -m fabric topology``: print the Slurm topology (or ibsim net, or oversubscription)
of a declared fabric (``--from-spec``) or a discovered one (``--from-ibnetdiscover``)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from fabric.cli.errors import CommandError, Exit, read_input

#: The default input cap (``--max-mb``), parse's and import's (fabric.parsers.text's
#: DEFAULT_LIMIT_MIB): a 16,384-host, 131,072-HCA fabric prints about 55 MB.
DEFAULT_MAX_MB = 64
_FIX = "pass ibnetdiscover's plain output (a file, or '-' for stdin)"

if TYPE_CHECKING:
    from fabric.topology.graph import FabricGraph


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``topology`` subcommand."""
    parser = subparsers.add_parser(
        "topology",
        help="print Slurm topology.conf / topology.yaml from a spec or ibnetdiscover output",
        description="Print the Slurm topology of a fabric. Hosts cabled to several leaves "
        "(rail-optimized) are placed under their rail-0 leaf (see fabric.topology.slurm). "
        "Exit 0, or 2 on a bad spec, a bad option, or ibnetdiscover output that is unreadable, "
        "binary, larger than --max-mb, empty, cut off or not ibnetdiscover's, or a fabric with "
        "no switch cabled to a host.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--from-ibnetdiscover", metavar="FILE", help="ibnetdiscover output ('-' for stdin)"
    )
    source.add_argument(
        "--from-spec", metavar="SPEC", help="cluster spec YAML or Pulumi stack file"
    )
    parser.add_argument(
        "--plugin",
        choices=("tree", "block", "yaml"),
        default="tree",
        help="topology.conf for topology/tree (default) or topology/block, or topology.yaml",
    )
    parser.add_argument(
        "--block-size", type=int, metavar="N", help="BlockSizes base (block and yaml)"
    )
    parser.add_argument(
        "--nodes",
        metavar="HOSTLIST",
        help="keep only these hosts (the Slurm nodes), e.g. gpu[01-08]: Slurm refuses a "
        "topology.conf naming a host slurm.conf does not; leaves left without one are dropped",
    )
    parser.add_argument(
        "--max-mb",
        type=int,
        default=DEFAULT_MAX_MB,
        metavar="N",
        help=f"refuse ibnetdiscover input larger than N MiB (default {DEFAULT_MAX_MB})",
    )
    parser.add_argument("--ibsim-net", action="store_true", help="print an ibsim net file instead")
    parser.add_argument(
        "--oversubscription",
        action="store_true",
        help="print each leaf's down/up bandwidth and ratio instead",
    )
    parser.set_defaults(func=cmd_topology)


def _graph(args: argparse.Namespace) -> FabricGraph:
    if args.from_spec:
        from fabric.spec import load_spec
        from fabric.topology.from_spec import graph_from_spec

        return graph_from_spec(load_spec(args.from_spec))
    from fabric.parsers.ibnetdiscover import parse

    return parse(_capture(args))


def _capture(args: argparse.Namespace) -> str:
    """The ibnetdiscover text. A last line without its newline is no sign of a cut here: the
    hand-off saves Ansible's registered stdout, which drops it. A line cut short fails to parse
    (its line is named), and a capture cut at a line boundary is refused by the parser."""
    return read_input(args.from_ibnetdiscover, _FIX, args.max_mb, "--max-mb N").text


def _render(args: argparse.Namespace, graph: FabricGraph) -> str:
    from fabric.topology.slurm import block_conf, topology_yaml, tree_conf

    if args.ibsim_net:
        from fabric.topology.ibsim import render_net

        return render_net(graph)
    if args.oversubscription:
        return "".join(
            f"{load.switch}\tdown {load.down_gbps:g} Gb/s\tup {load.up_gbps:g} Gb/s\t"
            f"{'no uplinks' if load.oversubscription is None else f'{load.oversubscription:.2f}:1'}\n"
            for load in graph.leaf_loads()
        )
    if args.plugin == "tree":
        return tree_conf(graph)
    if args.plugin == "block":
        return block_conf(graph, args.block_size)
    return topology_yaml(graph, args.block_size)


def _other_output(args: argparse.Namespace) -> bool:
    """Whether anything but the whole fabric's topology.conf is asked for."""
    return args.nodes is not None or args.ibsim_net or args.oversubscription


def cmd_topology(args: argparse.Namespace) -> int:
    """Build the graph, print the chosen output. A bad spec, unreadable or unparsable
    ibnetdiscover output, a bad host list or block size are bad input: exit 2 (via main)."""
    if args.block_size is not None and args.block_size < 1:
        raise CommandError("--block-size must be 1 or more")
    if args.max_mb < 1:
        raise CommandError("--max-mb must be 1 or more")
    if args.from_ibnetdiscover and args.plugin == "tree" and not _other_output(args):
        from fabric.parsers.ibnetdiscover.tree import tree_conf  # no graph: the compiled writer

        sys.stdout.write(tree_conf(_capture(args)))
        return Exit.OK
    graph = _graph(args)
    if args.nodes is not None:
        from fabric.hostlist import HostlistError, expand
        from fabric.topology.render import only_hosts

        try:
            hosts = expand(args.nodes)
        except HostlistError as err:
            raise CommandError(f"--nodes: {err}") from err
        graph = only_hosts(graph, hosts)
    sys.stdout.write(_render(args, graph))
    return Exit.OK
