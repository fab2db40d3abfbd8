"""Adding a target is its folder and one registry line, walked as docs/ARCHITECTURE.md
("Adding a target") says, on a throwaway copy of the package.

The copy gets a target ``acme`` (``fabric/targets/acme/``: ``__init__.py``, ``section.py``,
``rules.py``, ``component.py``) and one line in ``TARGETS``; nothing else of ``fabric/``
changes. In the copy, the registry, boundary and import-graph tests pass unchanged, ``python
-m fabric validate`` accepts an acme spec and names the acme block when it is missing, the
JSON schema has the section, and the program builds the acme component under Pulumi's mocks.
"""

from __future__ import annotations

import filecmp
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from fabric.state import REPO_ROOT

#: What the copy needs: the package, what the import graph reads, the tests it runs.
COPIED = ("fabric", "roles", "playbooks", "__main__.py", "ansible.cfg", "Pulumi.yaml")
TESTS = ("conftest.py", "test_targets_registry.py", "test_target_boundary.py")
TESTS_SLOW = ("test_import_graph.py",)

FOLDER = {
    "__init__.py": '"""Target ``acme``: a throwaway target, added as docs/ARCHITECTURE.md says."""\n',
    "section.py": '''
        """The ``acme:`` section of a spec (spec layer)."""

        from __future__ import annotations

        from pydantic import Field

        from fabric.spec.blocks import Model


        class AcmeSpec(Model):
            """Acme target: nodes in an acme region."""

            region: str = Field(pattern=r"^[a-z]+-[0-9]$", description="e.g. moon-1")


        MODEL = AcmeSpec
        ''',
    "rules.py": '''
        """Target ``acme``'s spec rules (spec layer)."""

        from __future__ import annotations

        from fabric.spec.checker import Checker, Rule


        def check_acme(c: Checker) -> None:
            """Every acme node has a management address."""
            if c.spec.target != "acme" or not c.known("target"):
                return
            for host in c.spec.hosts:
                if host not in c.spec.management.addresses:
                    c.add(f"management.addresses.{host}", "acme needs an address; add one")


        RULES: tuple[Rule, ...] = (check_acme,)
        ''',
    "component.py": '''
        """Target ``acme``'s component (targets layer)."""

        from __future__ import annotations

        import pulumi

        from fabric.components.target import TargetCluster
        from fabric.spec import ClusterSpec, SpecError, provision_problems


        class AcmeCluster(TargetCluster):
            """Adopts the declared nodes at their management addresses."""

            def __init__(
                self, name: str, spec: ClusterSpec, opts: pulumi.ResourceOptions | None = None
            ) -> None:
                super().__init__("railyard:acme:Cluster", name, None, opts)
                if problems := provision_problems(spec, "acme"):
                    raise SpecError(problems)
                hosts = {
                    h: {"address": str(a), "region": spec.acme.region}
                    for h, a in spec.management.addresses.items()
                }
                self.export(spec, inventory={"all": {"hosts": sorted(hosts)}}, hosts=hosts)
        ''',
}

REGISTRY_LINE = '    "acme": Target("AcmeCluster", frozenset({"section"})),\n'

SPEC = {
    "name": "moonbase",
    "target": "acme",
    "nodes": [{"role": "compute", "names": "gpu[01-02]"}],
    "fabric": {"kind": "roce", "mtu": 4096},
    "management": {
        "subnet": "198.18.0.0/24",
        "addresses": {"gpu01": "198.18.0.11", "gpu02": "198.18.0.12"},
    },
    "acme": {"region": "moon-1"},
}

PROGRAM_TEST = """
    from fabric.program import cluster_component
    from fabric.spec import load_spec


    def test_the_program_builds_the_acme_component(build_component, tmp_path):
        spec = load_spec("acme.yaml")
        _, out = build_component(lambda: cluster_component("moonbase", spec), "acme")
        assert out["hosts"]["gpu02"] == {"address": "198.18.0.12", "region": "moon-1"}
        assert out["inventory"] == {"all": {"hosts": ["gpu01", "gpu02"]}}
    """


def _ignore(_dir: str, names: list[str]) -> list[str]:
    return [n for n in names if n in ("__pycache__", "molecule") or n.endswith(".so")]


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package with target acme added: its folder and one registry line."""
    root = tmp_path_factory.mktemp("acme")
    for name in COPIED:
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=_ignore)
        else:
            shutil.copy2(source, root / name)
    folder = root / "fabric" / "targets" / "acme"
    folder.mkdir()
    for name, text in FOLDER.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip())
    registry = root / "fabric" / "targets" / "__init__.py"
    text = registry.read_text()
    anchor = "TARGETS: dict[str, Target] = {\n"
    assert anchor in text, "the registry's table moved: update this walk"
    registry.write_text(text.replace(anchor, anchor + REGISTRY_LINE, 1))
    (root / "tests" / "unit").mkdir(parents=True)
    for name in (*TESTS, *TESTS_SLOW):
        shutil.copy2(REPO_ROOT / "tests" / "unit" / name, root / "tests" / "unit" / name)
    (root / "tests" / "unit" / "test_acme.py").write_text(textwrap.dedent(PROGRAM_TEST))
    (root / "acme.yaml").write_text(yaml.safe_dump(SPEC))
    return root


def _run(copy: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin", "HOME": str(copy)}
    return subprocess.run(
        [sys.executable, *argv],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _changed(a: Path, b: Path, rel: Path = Path()) -> list[str]:
    """Files that differ between the trees ``a`` and ``b`` (added, removed or edited)."""
    cmp = filecmp.dircmp(a, b, ignore=["__pycache__"])
    names = (*cmp.left_only, *cmp.right_only, *cmp.diff_files)
    out = [str(rel / n) for n in names if not n.endswith(".so")]  # build outputs, not copied
    for sub in cmp.common_dirs:
        out += _changed(a / sub, b / sub, rel / sub)
    return sorted(out)


def test_the_target_touches_only_its_folder_and_one_registry_line(copy: Path):
    assert _changed(REPO_ROOT / "fabric", copy / "fabric") == [
        "targets/__init__.py",
        "targets/acme",
    ]
    old = (REPO_ROOT / "fabric" / "targets" / "__init__.py").read_text().splitlines()
    new = (copy / "fabric" / "targets" / "__init__.py").read_text().splitlines()
    assert [line for line in new if line not in old] == [REGISTRY_LINE.rstrip("\n")]


def test_the_shared_tests_pass_with_the_new_target_unchanged(copy: Path):
    done = _run(
        copy, "-m", "pytest", "-q", "-p", "no:cacheprovider", *[f"tests/unit/{t}" for t in TESTS]
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout


def test_the_program_builds_it_and_the_import_graph_places_its_parts(copy: Path):
    tests = ["tests/unit/test_acme.py", *[f"tests/unit/{t}" for t in TESTS_SLOW]]
    done = _run(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_validate_takes_the_new_target_and_names_its_block(copy: Path):
    done = _run(copy, "-m", "fabric", "validate", "--spec", "acme.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    broken = dict(SPEC)
    del broken["acme"]
    (copy / "no-acme.yaml").write_text(yaml.safe_dump(broken))
    done = _run(copy, "-m", "fabric", "validate", "--spec", "no-acme.yaml")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "acme" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    done = _run(copy, "-m", "fabric", "schema")
    assert done.returncode == 0, done.stderr
    assert "AcmeSpec" in done.stdout and '"acme"' in done.stdout
