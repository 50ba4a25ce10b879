"""The rule contract: one class per file in rules/, carrying its whole story.

A rule is a visitor. The engine walks each file once and calls every enabled rule's
`visit_<NodeType>` / `leave_<NodeType>` methods in the same pass; `self.ctx` (a
`synclint.semantic.context.RuleContext`, the only thing a rule touches) answers the
contextual questions: is this a tensor, on which device, are we in a loop, under
`no_grad`, in hot code.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

    from synclint.findings import Finding
    from synclint.noqa import NoqaMap, Use
    from synclint.semantic.context import RuleContext, Site

CODE_RE = re.compile(r"^SYN[1-9]\d\d$")
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
FAMILIES = {
    "1": "device-to-host read-back",
    "2": "data-dependent output shape",
    "3": "blocking host-to-device transfer",
    "4": "explicit synchronization",
    "5": "GPU overhead (not a sync)",
    "6": "compiled code (torch.compile)",
    "9": "meta: suppression comments",
}
REQUIRED_HEADINGS = ("## What it does", "## Why is this bad?", "## Use instead")


@dataclass(frozen=True)
class Valid:
    """Code on which the rule must stay silent. With `cold=True`: code the rule reports
    only as cold (it runs once), so `--hot-only` is silent on it."""

    code: str
    cold: bool = False


@dataclass(frozen=True)
class Invalid:
    """Code on which the rule must fire; optional checks on what it reports."""

    code: str
    message: Optional[str] = None
    line: Optional[int] = None  # 1-based row of the (first) finding
    hot: Optional[bool] = None
    fixed: Optional[str] = None  # expected source after applying fixes (unsafe included)


@dataclass(frozen=True)
class BenchPair:
    """The flagged pattern and its fix as real code, for `synclint bench`.

    `setup` runs once with `torch`, `device` and the names in `sizes` bound, and defines
    the inputs. `flagged` and `fixed` each define a function of that name whose
    parameters are names that `setup` defined; both return a result to compare.
    """

    setup: str
    flagged: str
    fixed: str
    sizes: Dict[str, int] = field(default_factory=dict)
    expect: str = "time"  # "time" | "memory" | "syncs"
    condition: Optional[str] = None  # when the fix is equivalent, if not always
    compare: str = "equal"  # "equal" | "close" | "none"
    debug_mode_sees: bool = True  # False where set_sync_debug_mode cannot see the sync
    requires: Tuple[str, ...] = ()  # modules the pair imports beside torch (`torchvision`)
    # the fix makes fewer of the flagged calls, not none (one NMS a step, not one per
    # class): its side is flagged too, as many times or fewer
    fix_still_flagged: bool = False


class Rule:
    CODE: ClassVar[str]
    NAME: ClassVar[str]
    MESSAGE: ClassVar[str]  # str.format template; the hazard in one clause, no period
    FIX_TITLE: ClassVar[Optional[str]] = None  # imperative: what the user should do
    FIX: ClassVar[str] = "never"  # never | sometimes | always: is an automatic fix emitted
    DEFAULT_ON: ClassVar[bool] = True
    CATALOGUE: ClassVar[Sequence[str]] = ()  # rows of reference/sync-catalogue.md
    VALID: ClassVar[List[Valid]] = []
    INVALID: ClassVar[List[Invalid]] = []
    BENCH: ClassVar[Optional[BenchPair]] = None
    # The names of the calls `visit_Call` can act on: a call's function as spelled
    # (`x.item`, `print`) or the last part of the qualified name its imports make of it
    # (`from torch import nonzero as nz`: `nonzero`). The engine calls `visit_Call` only for
    # those; None: for every call (a rule that asks what the called object is).
    CALLS: ClassVar[Optional[FrozenSet[str]]] = None
    # Code that times itself (beside a clock read, or calling a `Timer` of another module)
    # syncs on purpose: the rule's findings there are dropped.
    TIMING_EXEMPT: ClassVar[bool] = False
    # Only where it runs every step is it worth a finding (one `empty_cache()` between phases
    # costs nothing): its cold findings are dropped once the project's heat is known.
    HOT_ONLY: ClassVar[bool] = False
    # What it reports is a matter of grad mode (autograd on where it need not be): its
    # findings are dropped where every caller in the project runs the function with autograd
    # off (`Project.grad_off_scopes`), as the rule itself asks of the callers in its file.
    GRAD_MODE_EXEMPT: ClassVar[bool] = False
    # It reports transfers, which are findings where they repeat: a one-time transfer at setup
    # (a model's constructor, a memoised table, the program's start-up) has no fix worth
    # making, so its findings there are dropped (`semantic.setup`).
    SETUP_EXEMPT: ClassVar[bool] = False
    # A base that rules derive from (`CompiledRule`), itself no rule: neither validated nor
    # registered. Read from the class's own namespace, so a rule deriving from it is a rule.
    ABSTRACT: ClassVar[bool] = False
    # A rule about the `# noqa` comments themselves: it reports nothing during the walk, and
    # `noqa_findings` runs after the other rules, from which directive entries silenced
    # something (the unused-noqa rule).
    READS_NOQA: ClassVar[bool] = False

    # Filled in by __init_subclass__.
    FAMILY: ClassVar[str]
    SUMMARY: ClassVar[str]
    DOC: ClassVar[str]

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        where = f"{cls.__module__}.{cls.__qualname__}"
        # every attribute a rule class sets in capitals is one the engine reads: declared here
        undeclared = sorted(n for n in vars(cls) if _CONTRACT_NAME.match(n) and n not in _DECLARED)
        if undeclared:
            raise TypeError(f"{where}: {', '.join(undeclared)} not declared on Rule")
        if cls.__dict__.get("ABSTRACT"):
            return
        for attr in ("CODE", "NAME", "MESSAGE"):
            if not isinstance(getattr(cls, attr, None), str):
                raise TypeError(f"{where}: missing {attr}")
        if not CODE_RE.match(cls.CODE):
            raise TypeError(f"{where}: code {cls.CODE!r} is not SYN + three digits")
        if not NAME_RE.match(cls.NAME):
            raise TypeError(f"{where}: name {cls.NAME!r} is not kebab-case")
        if cls.MESSAGE.endswith("."):
            raise TypeError(f"{where}: message ends with a period")
        doc = textwrap.dedent(cls.__doc__ or "").strip()
        for heading in REQUIRED_HEADINGS:
            if heading not in doc:
                raise TypeError(f"{where}: docstring lacks {heading!r}")
        if cls.FIX not in ("never", "sometimes", "always"):
            raise TypeError(f"{where}: FIX must be never|sometimes|always")
        if cls.FIX != "never" and ("## Fix safety" not in doc or not cls.FIX_TITLE):
            raise TypeError(f"{where}: a fixable rule needs a FIX_TITLE and a '## Fix safety' section")
        if not cls.VALID or not cls.INVALID:
            raise TypeError(f"{where}: needs VALID and INVALID examples")
        if cls.READS_NOQA and cls.noqa_findings.__func__ is Rule.noqa_findings.__func__:
            raise TypeError(f"{where}: READS_NOQA needs a noqa_findings of its own")
        for flag in ("DEFAULT_ON", "TIMING_EXEMPT", "HOT_ONLY", "GRAD_MODE_EXEMPT", "READS_NOQA"):
            if type(getattr(cls, flag)) is not bool:
                raise TypeError(f"{where}: {flag} must be True or False")
        if isinstance(cls.CATALOGUE, str) or not all(isinstance(row, str) for row in cls.CATALOGUE):
            raise TypeError(f"{where}: CATALOGUE must be a sequence of rows (strings)")
        if cls.BENCH is not None and not isinstance(cls.BENCH, BenchPair):
            raise TypeError(f"{where}: BENCH must be a BenchPair or None")
        if cls.CALLS is not None and not (isinstance(cls.CALLS, frozenset) and cls.CALLS
                                          and all(isinstance(n, str) for n in cls.CALLS)):
            raise TypeError(f"{where}: CALLS must be None or a non-empty frozenset of names")
        cls.FAMILY = FAMILIES[cls.CODE[3]]
        cls.DOC = doc
        cls.SUMMARY = _summary(doc)

    def __init__(self, ctx: "RuleContext") -> None:
        self.ctx = ctx

    @classmethod
    def noqa_findings(cls, source: str, filename: str, noqa: "NoqaMap", used: "Set[Use]",
                      rules: "Sequence[type]") -> "List[Finding]":
        """For a rule that `READS_NOQA`: its findings about the file's `# noqa` comments, given
        which directive entries (`used`) silenced another rule's finding."""
        return []

    def report(
        self,
        node: "cst.CSTNode",
        replacement: "Optional[cst.CSTNode]" = None,
        *,
        target: "Optional[cst.CSTNode]" = None,
        safe: bool = False,
        fix_title: Optional[str] = None,
        **fmt: object,
    ) -> None:
        """Report `node`. A fix replaces `target` (default: `node`) with `replacement`."""
        self.ctx.report(self, node, self.MESSAGE.format(**fmt),
                        **self._fix_args(node, replacement, target, safe, fix_title, fmt))

    def report_at(
        self,
        where: "Site",
        node: "cst.CSTNode",
        replacement: "Optional[cst.CSTNode]" = None,
        *,
        target: "Optional[cst.CSTNode]" = None,
        safe: bool = False,
        fix_title: Optional[str] = None,
        **fmt: object,
    ) -> None:
        """`report`, placed at a site met earlier (`self.ctx.site()`): for a finding decided
        after the walk has left the place it was seen (at the end of a function or file)."""
        self.ctx.report_at(where, self, node, self.MESSAGE.format(**fmt),
                           **self._fix_args(node, replacement, target, safe, fix_title, fmt))

    def _fix_args(self, node, replacement, target, safe: bool, fix_title: Optional[str], fmt: dict) -> dict:
        return dict(replacement=replacement, target=target if target is not None else node, safe=safe,
                    fix_title=(fix_title or self.FIX_TITLE or "").format(**fmt) or None)


_CONTRACT_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_DECLARED = frozenset(Rule.__annotations__)


def _summary(doc: str) -> str:
    """First sentence under '## What it does'."""
    body = doc.split("## What it does", 1)[1].split("##", 1)[0].strip()
    sentence = " ".join(body.split())
    end = sentence.find(". ")
    return sentence if end < 0 else sentence[: end + 1]
