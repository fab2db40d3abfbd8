"""``railyard topology``: print the Slurm topology (or Kubernetes topology labels and a
Kueue Topology, ibsim net, or oversubscription) of a declared fabric (``--spec FILE`` or
``--stack NAME``), a discovered one (``--from-ibnetdiscover``), or cloud instances as their
provider places them (``--from-aws-topology``, ``--from-gce-instances``, ``--from-placement``).
``--json`` wraps the output in one JSON document (see :func:`_write`)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from fabric.cli.errors import CommandError, Exit, emit_json, read_input
from fabric.cli.options import add_json, add_retired, add_spec, add_stack, spec_path

#: The default input cap (``--max-mb``), parse's and import's (fabric.parsers.text's
#: DEFAULT_LIMIT_MIB): a 16,384-host, 131,072-HCA fabric prints about 55 MB.
DEFAULT_MAX_MB = 64
_FIX = "pass ibnetdiscover's plain output (a file, or '-' for stdin)"

if TYPE_CHECKING:
    from fabric.graph import FabricGraph


def register(subparsers: argparse._SubParsersAction) -> None:
    """Register the ``topology`` subcommand."""
    parser = subparsers.add_parser(
        "topology",
        help="print Slurm topology.conf / topology.yaml from a spec or ibnetdiscover output",
        description="Print the Slurm topology of a fabric, or (--plugin kubernetes) its "
        "Kubernetes Node topology labels and a Kueue Topology naming them "
        "(fabric.topology.kubernetes). Hosts cabled to several leaves "
        "(rail-optimized) are placed under their rail-0 leaf (see fabric.topology.slurm). "
        "Exit 0, or 2 on a bad spec, a bad option, or ibnetdiscover output that is unreadable, "
        "binary, larger than --max-mb, empty, cut off or not ibnetdiscover's, or a fabric with "
        "no switch cabled to a host.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--from-ibnetdiscover", metavar="FILE", help="ibnetdiscover output ('-' for stdin)"
    )
    add_spec(source, help="cluster spec YAML or Pulumi.<stack>.yaml stack file")
    add_stack(source, default=False)
    source.add_argument(
        "--from-aws-topology",
        metavar="FILE",
        help="aws ec2 describe-instance-topology JSON ('-' for stdin); needs --hosts",
    )
    source.add_argument(
        "--from-gce-instances",
        metavar="FILE",
        help="gcloud compute instances list --format=json ('-' for stdin): their placement",
    )
    source.add_argument(
        "--from-placement",
        metavar="FILE",
        help="JSON host -> {stdout, rc, stderr} of each compute node's placement reading "
        "(each target's PLACEMENT_COMMAND, as the hand-off gathers it); "
        "needs --provider, and --region on aws (DescribeInstanceTopology through the AWS CLI)",
    )
    parser.add_argument(
        "--provider",
        help="with --from-placement: the target whose placement.py reads the readings (aws, gcp)",
    )
    parser.add_argument(
        "--region", help="the provider's region, with --from-placement where it needs one (aws)"
    )
    parser.add_argument(
        "--hosts",
        metavar="FILE",
        help="pulumi stack output hosts --json: names the AWS instances (instance_id -> host)",
    )
    parser.add_argument(
        "--plugin",
        choices=("tree", "block", "yaml", "kubernetes"),
        default="tree",
        help="topology.conf for topology/tree (default) or topology/block, topology.yaml, or "
        "kubernetes: Node label patches (a v1 List) and a Kueue Topology",
    )
    parser.add_argument(
        "--label-scheme",
        choices=("topograph", "topograph-v0"),
        help="kubernetes: fabric.topograph.run/tier-N (topograph 1.0+), or "
        "network.topology.nvidia.com/leaf|spine|core (before 1.0); default: the spec's "
        "kubernetes.labels.scheme, else topograph",
    )
    parser.add_argument(
        "--kueue-topology",
        metavar="NAME",
        help="kubernetes: the Kueue Topology's name (default: the spec's "
        "kubernetes.labels.kueue_topology, else the cluster's name, else fabric)",
    )
    parser.add_argument(
        "--block-size", type=int, metavar="N", help="BlockSizes base (block and yaml)"
    )
    parser.add_argument(
        "--nodes",
        metavar="HOSTLIST",
        help="keep only these hosts (the Slurm nodes), e.g. gpu[01-08]: Slurm refuses a "
        "topology.conf naming a host slurm.conf does not; leaves left without one are dropped "
        "(default with --spec or --stack: the spec's compute nodes, slurm.conf's nodes, as the "
        "hand-off writes it)",
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
    add_json(
        parser,
        'print {"output": KIND, "text": TEXT, "warnings": [...]} (and "leaves" with '
        "--oversubscription) as one JSON document; an error too",
    )
    add_retired(parser, "topology")
    parser.set_defaults(func=cmd_topology, slurm_nodes=None)


def _json(path: str, what: str, max_mb: int) -> object:
    import json

    text = read_input(path, f"pass {what}", max_mb, "--max-mb N").text
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise CommandError(f"{path}: not JSON ({err}); pass {what}") from None


def _cloud_graph(args: argparse.Namespace) -> FabricGraph:
    """The graph of a provider's placement data (fabric.topology.cloud)."""
    from fabric.topology.cloud import aws_topology_graph, gce_topology_graph

    if args.from_placement:
        graph = _placement_graph(args)
    elif args.from_gce_instances:
        items = _json(
            args.from_gce_instances, "gcloud compute instances list --format=json", args.max_mb
        )
        if isinstance(items, dict) and isinstance(items.get("items"), list):
            items = items["items"]  # the REST API's instances.list response: {"items": [...]}
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise CommandError(
                f"{args.from_gce_instances}: not a list of instances; pass gcloud compute "
                "instances list --format=json, or the REST instances.list response ({items: "
                "[...]})"
            )
        graph = gce_topology_graph(items)
    else:
        if not args.hosts:
            raise CommandError(
                "--from-aws-topology needs --hosts FILE (pulumi stack output hosts --json) to "
                "name the instances"
            )
        hosts = _json(args.hosts, "pulumi stack output hosts --json", args.max_mb)
        response = _json(
            args.from_aws_topology, "aws ec2 describe-instance-topology's JSON", args.max_mb
        )
        if not isinstance(hosts, dict) or not isinstance(response, dict):
            raise CommandError("--hosts and --from-aws-topology each take one JSON object")
        names = {
            str(v["instance_id"]): h
            for h, v in hosts.items()
            if isinstance(v, dict) and v.get("instance_id") and v.get("role") in (None, "compute")
        }
        graph = aws_topology_graph(response, names)
    for warning in graph.warnings:
        print(f"warning: {warning}; Slurm will not place it in the topology", file=sys.stderr)
    return graph


def _placement_graph(args: argparse.Namespace) -> FabricGraph:
    """The graph of each node's placement reading (``--from-placement``)."""
    from fabric.targets import TARGETS, has_part, hook
    from fabric.verify.cloud_topology import provider_graph
    from fabric.verify.harness import HarnessError

    providers = [t for t in TARGETS if has_part(t, "placement")]
    regional = [t for t in providers if hook(t, "placement", "NEEDS_REGION", False)]
    if args.provider not in providers or (args.provider in regional and not args.region):
        raise CommandError(
            f"--from-placement needs --provider {'|'.join(providers)}"
            f" (and --region on {', '.join(regional)})"
        )
    data = _json(args.from_placement, "host -> {stdout, rc, stderr} JSON", args.max_mb)
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise CommandError(f"{args.from_placement}: not a JSON object of host -> reading")
    readings = {
        str(h): (str(v.get("stdout", "")), int(v.get("rc", 1)), str(v.get("stderr", "")))
        for h, v in data.items()
    }
    try:
        return provider_graph(args.provider, readings, args.region or "")
    except HarnessError as error:
        raise CommandError(f"placement not read: {error}") from None


def _graph(args: argparse.Namespace) -> FabricGraph:
    if args.from_aws_topology or args.from_gce_instances or args.from_placement:
        return _cloud_graph(args)
    if args.spec is not None or args.stack is not None:
        from fabric.spec import load_spec
        from fabric.topology.from_spec import graph_from_spec

        cluster = load_spec(spec_path(args))
        labels = cluster.kubernetes.labels if cluster.kubernetes is not None else None
        args.label_scheme = args.label_scheme or (labels.scheme if labels else None)
        args.kueue_topology = args.kueue_topology or (
            (labels.kueue_topology if labels else None) or cluster.name
        )
        if args.nodes is None and args.plugin != "kubernetes" and not _other_output(args):
            args.slurm_nodes = cluster.hosts_with_role("compute") or None
        return graph_from_spec(cluster)
    from fabric.parsers.ibnetdiscover import parse

    return parse(_capture(args))


def _capture(args: argparse.Namespace) -> str:
    """The ibnetdiscover text. A last line without its newline is no sign of a cut here: the
    hand-off saves Ansible's registered stdout, which drops it. A line cut short fails to parse
    (its line is named), and a capture cut at a line boundary is refused by the parser."""
    return read_input(args.from_ibnetdiscover, _FIX, args.max_mb, "--max-mb N").text


def _render(args: argparse.Namespace, graph: FabricGraph) -> tuple[str, list[str]]:
    """The chosen output's text and its warnings (each also printed on stderr)."""
    from fabric.topology.slurm import block_conf, topology_yaml, tree_conf

    if args.ibsim_net:
        from fabric.topology.ibsim import render_net

        return render_net(graph), []
    if args.oversubscription:
        return "".join(
            f"{load.switch}\tdown {load.down_gbps:g} Gb/s\tup {load.up_gbps:g} Gb/s\t"
            f"{'no uplinks' if load.oversubscription is None else f'{load.oversubscription:.2f}:1'}\n"
            for load in graph.leaf_loads()
        ), []
    if args.plugin == "kubernetes":
        from fabric.topology.kubernetes import render

        text, warnings = render(
            graph, args.label_scheme or "topograph", args.kueue_topology or "fabric"
        )
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)
        return text, list(warnings)
    if args.plugin == "tree":
        return tree_conf(graph), []
    if args.plugin == "block":
        return block_conf(graph, args.block_size), []
    return topology_yaml(graph, args.block_size), []


def _output_kind(args: argparse.Namespace) -> str:
    """What is printed: ``ibsim-net``, ``oversubscription`` or the ``--plugin``."""
    return (
        "ibsim-net"
        if args.ibsim_net
        else ("oversubscription" if args.oversubscription else args.plugin)
    )


def _write(
    args: argparse.Namespace,
    text: str,
    warnings: list[str],
    graph: FabricGraph | None = None,
) -> int:
    """Print ``text``, or under ``--json`` one document: ``output`` (its kind), ``text``,
    ``warnings``, and with ``--oversubscription`` each leaf's ``leaves`` entry."""
    if not args.json:
        sys.stdout.write(text)
        return Exit.OK
    doc: dict[str, object] = {"output": _output_kind(args), "text": text, "warnings": warnings}
    if args.oversubscription and graph is not None:
        doc["leaves"] = [
            {
                "switch": load.switch,
                "down_gbps": load.down_gbps,
                "up_gbps": load.up_gbps,
                "oversubscription": load.oversubscription,
            }
            for load in graph.leaf_loads()
        ]
    emit_json(doc)
    return Exit.OK


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
    if args.plugin != "kubernetes" and (args.label_scheme or args.kueue_topology):
        raise CommandError("--label-scheme and --kueue-topology go with --plugin kubernetes")
    if args.kueue_topology is not None:
        from fabric.spec.kubernetes import DNS_SUBDOMAIN

        if not DNS_SUBDOMAIN.match(args.kueue_topology):
            raise CommandError(
                f"--kueue-topology {args.kueue_topology!r} is not an object name; use "
                "lower-case letters, digits, '-' and '.', e.g. fabric"
            )
    if args.from_ibnetdiscover and args.plugin == "tree" and not _other_output(args):
        from fabric.parsers.ibnetdiscover.tree import compiled_tree_conf  # no graph

        text = _capture(args)
        conf = compiled_tree_conf(text)
        if conf is None:  # declined: the reference, which names what is wrong with the text
            from fabric.parsers.ibnetdiscover import parse
            from fabric.topology.slurm import tree_conf

            conf = tree_conf(parse(text))
        return _write(args, conf, [])
    graph = _graph(args)
    if args.from_placement and not graph.cas:  # nothing placed: Slurm gets no topology
        warning = "the provider places none of the nodes: no topology"
        print(f"warning: {warning}", file=sys.stderr)
        return _write(args, "", [*graph.warnings, warning]) if args.json else Exit.OK
    hosts = args.slurm_nodes  # a spec's Slurm nodes (set by _graph), as the hand-off picks them
    if args.nodes is not None:
        from fabric.hostlist import HostlistError, expand

        try:
            hosts = expand(args.nodes)
        except HostlistError as err:
            raise CommandError(f"--nodes: {err}") from err
    if hosts is not None:
        from fabric.topology.render import only_hosts

        graph = only_hosts(graph, hosts)
    text, warnings = _render(args, graph)
    return _write(args, text, [*graph.warnings, *warnings], graph)
