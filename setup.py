"""Build hook for the optional compiled ibnetdiscover scanner and topology.conf writer (metadata
lives in pyproject.toml).

``optional=True``: without a C compiler the install still succeeds and the parser and
``topology`` use their pure-Python paths (same results, slower; see bench/topology/README.md).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "fabric.parsers.ibnetdiscover._ibnetdiscover_scan",
            [
                "fabric/parsers/ibnetdiscover/_ibnetdiscover_scan.c",
                "fabric/parsers/ibnetdiscover/_ibnetdiscover_tree.c",
            ],
            depends=["fabric/parsers/ibnetdiscover/_ibnetdiscover_lines.h"],
            extra_compile_args=["-O2", "-Wall", "-Wextra"],
            optional=True,
        )
    ]
)
