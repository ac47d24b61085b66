"""Stop reasons of a model turn that the tool loop must honour. Pure.

Output limit: a turn that ended because it hit the output-token limit (OpenAI
``finish_reason: "length"``, Anthropic ``stop_reason: "max_tokens"``) may hold a tool call cut
in the middle of its arguments, or only a reasoning block. None of its tool calls is run and it
is never answered with an argument error: the loop sends the same request again once, with a
higher limit (:func:`raised_output_limit`: twice the limit in force, at most the endpoint's cap,
``llm.max_output_tokens_cap``, which defaults to twice ``llm.max_output_tokens``). A second cut,
or no room to raise the limit, ends the group with ``StopReason.OUTPUT_LIMIT`` (incomplete,
never cached). The raised limit stays in force for the rest of the loop, so a group gets one
retry, not one per turn. The same holds for both protocols and for reasoning models (their
reasoning counts against the same limit).

Final answer: a loop that ends without a valid ``task_done`` (the round limit's grace turn
answered with no tool, another tool, or comments only) has no final answer:
``StopReason.MAX_ROUNDS``, an incomplete group. (The stop reasons are ``vocabulary.StopReason``.)
"""

from __future__ import annotations

from ..llm import Endpoint, Turn

OUTPUT_LIMIT_FINISH = frozenset({"length", "max_tokens"})  # OpenAI / Anthropic wire values
OUTPUT_RETRY_FACTOR = 2  # the retry asks for twice the limit in force


def cut_by_output_limit(turn: Turn) -> bool:
    """True when ``turn`` stopped on the output-token limit (see module docstring)."""
    return turn.finish_reason.strip().lower() in OUTPUT_LIMIT_FINISH


def output_cap(ep: Endpoint) -> int:
    """The most output tokens a retry may ask for: ``ep.max_output_tokens_cap``, or twice
    ``ep.max_output_tokens`` when no cap is configured (0)."""
    return ep.max_output_tokens_cap or OUTPUT_RETRY_FACTOR * ep.max_output_tokens


def raised_output_limit(current: int, cap: int) -> int | None:
    """The output limit of the one retry after a cut turn: ``min(2 × current, cap)``; None
    when that is not above ``current`` (no room left under the cap)."""
    raised = min(OUTPUT_RETRY_FACTOR * current, cap)
    return raised if raised > current else None


def output_limit_error(limit: int, retried: bool) -> str:
    """One line for the group's warning when the output limit ends it."""
    how = ("again after one retry" if retried
           else "and llm.max_output_tokens_cap leaves no room to retry")
    return (f"the model's reply stopped at the output limit ({limit} tokens) {how}; its tool"
            " calls were not run (raise llm.max_output_tokens / llm.max_output_tokens_cap)")
