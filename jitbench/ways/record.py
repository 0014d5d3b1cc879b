"""The record of one way of jitting a method (:class:`Way`), read by the suite (the class it
builds, a built-in strategy) and by ``jitbench advise`` (how it is built from a user's object
and the code it prints) alike. Never imports JAX; design notes in docs/design.md.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
import re
from collections.abc import Callable

from packaging.requirements import InvalidRequirement, Requirement

from jitbench.errors import JitbenchError, StrategyUnavailable
from jitbench.strategies.codegen import (
    DEFAULT_SHAPE,
    Shape,
    Template,
    make_class,
    source,
    tuple_source,
)
from jitbench.ways.builders import Applies, Build, Convert
from jitbench.ways.names import Names


def _always(obj: object) -> str | None:
    """Every object can be called this way."""
    return None


@dataclasses.dataclass(frozen=True)
class Way:
    """One way of putting ``jax.jit`` on a method: one entry of the catalog.

    The suite's part (a built-in strategy, in :data:`jitbench.ways.registry.STRATEGIES`):
    ``render`` turns a :class:`~jitbench.strategies.codegen.Template` into the source of a
    module defining a class named after the way (``helper_function`` -> ``HelperFunction``)
    with one constructor parameter per field and a ``calc(y)`` method; ``summary`` and
    ``mechanism`` say what it is and what it costs. ``requires`` lists the importable
    packages it needs, as requirement specifiers (``"flax>=0.12.1"``: that release or a newer
    one), ``extra`` the pip extra that installs them, and ``holder`` the attribute holding the
    fields when the class keeps them on another object (an nnx module) rather than on itself.
    Its fields are changed as a user's object is, found by walking it (``jitbench.targets``).
    ``function`` names a module-level jitted function the user calls on the fields
    (``_calc(s0, a0, y)``), no method, no object: the floor the strategies are held to.
    ``raises_on`` names the scenario steps (``jitbench.auditing.scenario``) where a call
    raises by design, such as an AOT executable called with a new shape: the after-change
    benchmark records those as n/a, and the tests check the audit sees exactly these errors.
    ``kind`` is the kind of object its class is (``kinds.object_kind``'s words), what the
    verdict compares a user's object with; "" where undeclared (a plugin's: its class says).

    Advise's part (``jitbench advise``, built from a user's own object): ``label`` is its
    name there (the way's own name where empty), ``caveat`` what it costs its user,
    ``snippet`` the code to write (formatted with :class:`Names`), ``build(obj, raw)``
    returns ``bind`` (``bind(obj)`` is a :data:`~jitbench.ways.builders.Bound`), ``applies``
    says why it cannot be built for an object (None: it can), ``convert`` makes a new
    instance into the object the way calls, ``filters``: its call hashes non-array leaves,
    ``body``: its code carries the call's body where that can be rewritten without ``self``,
    ``wrapping`` the code printed where the class is an installed library's (or, for a way
    whose code carries the body, where the body cannot be rewritten): the class used as
    shipped, never edited; ``copies``: its jit takes a copy of the object (a pytree flattened
    and rebuilt), so what the call writes into the object is not written back, and it is not
    built for a call that writes.
    """

    name: str
    summary: str = ""
    mechanism: str = ""
    render: Callable[[Template], str] | None = None
    requires: tuple[str, ...] = ()
    extra: str | None = None
    holder: str = ""
    raises_on: tuple[str, ...] = ()
    function: str = ""
    kind: str = ""
    label: str = ""
    caveat: str = ""
    snippet: str = ""
    build: Build | None = None
    applies: Applies = _always
    convert: Convert | None = None
    filters: bool = False
    body: bool = False
    copies: bool = False
    wrapping: str = ""

    def __post_init__(self) -> None:
        """Refuse what :attr:`unavailable_reason` could not parse later."""
        if not self.label:
            object.__setattr__(self, "label", self.name)
        form = "a tuple of requirement specifiers such as ('flax>=0.12.1',)"
        if not isinstance(self.requires, tuple):
            raise JitbenchError(
                f"strategy {self.name!r}: requires must be {form}, got {self.requires!r}"
            )
        for text in self.requires:
            try:
                Requirement(text if isinstance(text, str) else "")
            except InvalidRequirement:
                raise JitbenchError(
                    f"strategy {self.name!r} requires {text!r}, which is not a requirement "
                    f"specifier; expected {form}"
                ) from None

    @property
    def libraries(self) -> frozenset[str]:
        """The packages it needs, by name (``flax`` for ``flax>=0.12.1``)."""
        return frozenset(Requirement(text).name for text in self.requires)

    @property
    def unavailable_reason(self) -> str | None:
        """Why the strategy cannot run here, or None when it can."""
        hint = f" (pip install 'jitbench[{self.extra}]')" if self.extra else ""
        for text in self.requires:
            requirement = Requirement(text)
            package = requirement.name
            if importlib.util.find_spec(package) is None:
                return f"strategy {self.name!r} needs package {package!r}{hint}"
            installed = importlib.metadata.version(package)
            if not requirement.specifier.contains(installed, prereleases=True):
                return f"strategy {self.name!r} needs {text}, found {package} {installed}"
        return None

    @property
    def available(self) -> bool:
        return self.unavailable_reason is None

    def check_available(self) -> None:
        """Raise :class:`StrategyUnavailable` (asv shows n/a) when a package is missing."""
        reason = self.unavailable_reason
        if reason is not None:
            raise StrategyUnavailable(reason)

    def make_class(self, shape: Shape = DEFAULT_SHAPE, *, probe: bool = False) -> type:
        """The generated class for ``shape`` (one class per shape, cached)."""
        return make_class(self, shape, probe)

    def source(self, shape: Shape = DEFAULT_SHAPE) -> str:
        """The generated module source for ``shape``."""
        return source(self, shape)

    def wraps(self, names: Names) -> bool:
        """Whether this way's code for ``names`` is its ``wrapping`` form."""
        return bool(self.wrapping) and (names.library or (self.body and not names.body))

    def code(self, names: Names) -> str:
        """Advise's snippet for this object's class and call."""
        fields = dataclasses.asdict(names)
        fields["comma_args"] = f", {names.args}" if names.args else ""
        fields["body"] = names.body.replace("{fn}", names.fn)
        for part in ("children", "aux"):
            attributes = getattr(names, part)
            fields[f"{part}_of"] = tuple_source([f"o.{n}" for n in attributes])
            fields[f"self_{part}"] = tuple_source([f"self.{n}" for n in attributes])
            fields[f"var_{part}"] = tuple_source([f"{names.var}.{n}" for n in attributes])
            fields[f"bare_{part}"] = tuple_source(attributes)
        # obj.<name> set from each non-empty part (an object whose attributes are all static
        # has no arrays: no line for them); in the helper, its bare names from both parts.
        fields["set_parts"] = _assignments(
            [([f"obj.{n}" for n in names.children], "children"),
             ([f"obj.{n}" for n in names.aux], "aux")], "    "
        )  # fmt: skip
        fields["rebuild"] = _assignments(
            [([f"{names.var}.{n}" for n in names.aux], "statics"),
             ([f"{names.var}.{n}" for n in names.children], "arrays")], "    "
        )  # fmt: skip
        fields["unpack"] = _assignments(
            [(list(names.aux), "statics"), (list(names.children), "arrays")], "    "
        )  # fmt: skip
        snippet = self.wrapping if self.wraps(names) else self.snippet
        code = snippet.format(**fields).strip("\n")
        # The import of a library's class, where a line of code (not a comment) names it.
        lines = [line.partition("#")[0] for line in code.splitlines()]
        if names.imports and any(re.search(rf"\b{names.cls}\b", line) for line in lines):
            code = f"{names.imports}\n\n{code}"
        return code


def _assignments(parts: list[tuple[list[str], str]], indent: str) -> str:
    """``(a, b) = source`` for each part with targets, one line each (none for an empty part)."""
    return "\n".join(f"{indent}{tuple_source(t)} = {source}" for t, source in parts if t)
