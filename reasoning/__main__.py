"""Command line: `python -m reasoning "question"` prints the approved answer.

--trace prints every event as it happens; --json prints only events, one JSON object per
line on stdout (for scripts and audits); --strategy forces direct, light or deep. The mode
comes from AGENT_MODE, the provider from NEXUS_LLM_PROVIDER (offline when no
ANTHROPIC_API_KEY is set).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

from reasoning.config import ConfigError, ReasoningConfig
from reasoning.events import Event
from reasoning.llm.factory import PROVIDERS, make_client
from reasoning.modes import MODE_NAMES, ReasoningFailed, create_mode
from reasoning.modes.adaptive import AdaptiveReasoningLoop
from reasoning.tools.local import builtin_provider
from reasoning.tools.registry import ToolRegistry
from reasoning.types import ExecutionStrategy


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m reasoning", description=__doc__.splitlines()[0])
    parser.add_argument("question", help="what to ask")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--trace", action="store_true", help="print every event to stderr as it happens")
    output.add_argument("--json", action="store_true", help="print every event as one JSON line on stdout")
    parser.add_argument("--strategy", choices=["direct", "light", "deep"], help="force a strategy")
    return parser.parse_args(argv)


async def _print_json(event: Event) -> None:
    print(json.dumps(event.to_dict(), ensure_ascii=False, default=str), flush=True)


async def _print_event(event: Event) -> None:
    payload = json.dumps(event.payload, ensure_ascii=False, default=str)
    if len(payload) > 240:
        payload = payload[:240] + "…"
    print(f"[{event.sequence:>3}] {event.kind:<20} {payload}", file=sys.stderr)


async def _main(args: argparse.Namespace) -> int:
    env = os.environ
    provider = env.get("NEXUS_LLM_PROVIDER") or ("anthropic" if env.get("ANTHROPIC_API_KEY") else "offline")
    if provider not in PROVIDERS:
        print(f"NEXUS_LLM_PROVIDER must be one of {', '.join(PROVIDERS)}; got {provider!r}", file=sys.stderr)
        return 2
    mode_name = (env.get("AGENT_MODE") or "adaptive").strip().lower()
    if mode_name not in MODE_NAMES:
        print(f"AGENT_MODE must be one of {', '.join(MODE_NAMES)}; got {mode_name!r}", file=sys.stderr)
        return 2
    try:
        config = ReasoningConfig.from_env(provider=provider)
    except ConfigError as exc:
        print(f"Configuration error: {exc}", file=sys.stderr)
        return 2
    key_var = "ANTHROPIC_API_KEY" if provider == "anthropic" else "OPENAI_API_KEY"
    base_var = "ANTHROPIC_BASE_URL" if provider == "anthropic" else "OPENAI_BASE_URL"
    client = make_client(
        provider,
        model=config.model,
        api_key=env.get(key_var) or None,
        base_url=env.get(base_var) or None,
        timeout=config.llm_timeout,
        max_retries=config.llm_max_retries,
    )
    tools = ToolRegistry(
        [builtin_provider()], timeout=config.tool_timeout, max_result_chars=config.max_tool_result_chars
    )
    mode = create_mode(mode_name, client, config)
    force = ExecutionStrategy.parse(args.strategy) if args.strategy else None
    sink = _print_json if args.json else _print_event if args.trace else None
    options = {"force_strategy": force} if force and isinstance(mode, AdaptiveReasoningLoop) else {}
    try:
        result = await mode.run(args.question, tools=tools, sink=sink, **options)
    except ReasoningFailed as failure:
        if not args.json:
            print(f"No answer: {failure.user_message}", file=sys.stderr)
        return 1
    finally:
        await tools.close()
    if args.json:
        return 0
    threshold = config.quality_threshold(result.final_strategy)
    if result.kind == "low_confidence" or (result.quality is not None and result.quality < threshold):
        # As the chat page says above such an answer: it was not approved.
        missing = "; ".join((result.evaluation.missing_aspects if result.evaluation else []) or [])
        print(
            f"Low confidence: quality {result.quality if result.quality is not None else 'n/a'} is below "
            f"{threshold}" + (f" (missing: {missing})" if missing else "") + ".\n"
        )
    print(result.answer)
    print(
        f"\n[{result.initial_strategy.value} → {result.final_strategy.value}, "
        f"quality {result.quality if result.quality is not None else 'n/a'}, {result.attempts} attempt(s), "
        f"{result.usage.input_tokens + result.usage.output_tokens} tokens, ${result.cost}]",
        file=sys.stderr,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(_main(_arguments(argv)))


if __name__ == "__main__":
    sys.exit(main())
