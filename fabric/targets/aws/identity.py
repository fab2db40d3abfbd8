"""The nodes' IAM identity: one role and instance profile on the head and compute nodes, as
AWS ParallelCluster sets one (cli/src/pcluster/templates/cdk_builder_utils.py,
``NodeIamResourcesBase``: a role per node kind with its own policy, CloudWatchAgentServerPolicy
when CloudWatch logs are on, ``AdditionalIamPolicies``; an ``InstanceProfile`` given is used as
is, none made).

The least the nodes need: the checks and the hand-off reach the nodes over SSH, and what asks
AWS (host keys from console output, DescribeInstanceTopology) runs on the controller with its
own credentials, so the nodes call no AWS API for railyard and run no CloudWatch agent. The
default role carries only ``AmazonSSMManagedInstanceCore``: the SSM agent the DLAMI ships
registers the node for Session Manager, a way in when SSH is down. ``aws.iam_policies`` sets
others (CloudWatchAgentServerPolicy where a CloudWatch agent runs; ``[]`` for none)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

__all__ = ["ASSUME_EC2", "NodeIdentity", "NodeIdentityArgs"]

#: Lets EC2 instances take the role.
ASSUME_EC2 = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "ec2.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
)


@dataclass(frozen=True)
class NodeIdentityArgs:
    """The managed policies to attach and the cluster's tags."""

    policies: list[str]
    tags: dict[str, str]


class NodeIdentity(pulumi.ComponentResource):
    """A role EC2 assumes, its managed policies, and the instance profile the nodes carry
    (``profile_name``)."""

    profile_name: pulumi.Output[str]

    def __init__(
        self, name: str, args: NodeIdentityArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("railyard:aws:NodeIdentity", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        role = aws.iam.Role(
            f"{name}-role",
            assume_role_policy=ASSUME_EC2,
            description="railyard nodes (head and compute)",
            tags=args.tags,
            opts=child,
        )
        for index, arn in enumerate(args.policies):
            aws.iam.RolePolicyAttachment(
                f"{name}-policy-{index}", role=role.name, policy_arn=arn, opts=child
            )
        profile = aws.iam.InstanceProfile(
            f"{name}-profile", role=role.name, tags=args.tags, opts=child
        )
        self.profile_name = profile.name
        self.register_outputs({"profile_name": self.profile_name})
