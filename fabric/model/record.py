"""How the model's and the check plan's parameter types are declared: records with fixed
fields. A 16,384-host plan makes 700,000 of them (HCA ports, rails, swept cables): a validated
pydantic model took 3 us to build each, a frozen dataclass 1.2 us (its ``__init__`` calls
``object.__setattr__`` per field), a slotted dataclass 0.23 us (ten fields, positional). They
are built from values the spec already validated, and nothing changes one once it is built;
they compare and hash by value. ``check --plan`` writes them as JSON objects of their fields,
in declaration order."""

from __future__ import annotations

from dataclasses import dataclass

#: ``@record class HcaPort: ...``: a slotted dataclass, hashed by its fields.
record = dataclass(slots=True, unsafe_hash=True)
#: The same, every field keyword-only (a type whose required fields follow optional ones).
keyword_record = dataclass(slots=True, unsafe_hash=True, kw_only=True)
