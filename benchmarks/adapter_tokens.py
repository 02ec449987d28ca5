"""Tokens of tool and skill definitions a LangChain agent sends per turn, with and without the adapter.

    python benchmarks/adapter_tokens.py

Every skill of the three public corpora in ../shared/corpora (agentskills profile, ~700 skills) is given to a
LangChain v1 agent (``create_agent``) as a tool named after the skill, described by its description; the agent
also has one tool of its own. A scripted conversation of eight user turns (LangChain's ``GenericFakeChatModel``
answers each) is run twice: without middleware, and with ``SkillRouterMiddleware`` (k=5). Per model call it
counts, in cl100k_base tokens (router.tokens):

- ``tool_tokens``: the tools bound to the model, each as the OpenAI tool JSON LangChain would send
  (``convert_to_openai_tool``, serialised compactly);
- ``context_tokens``: what the middleware appended to the system message (the routed skills' catalogue);
- ``total``: their sum.

Writes benchmarks/results/adapter_tokens.json. Needs the langchain extra (pip install 'skill-router[langchain]').
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

from common import CORPORA, ROOT, save
from router import Router
from router.config import RouterConfig
from router.tokens import TokenCounter

ROOTS = [str(CORPORA / "anthropic-skills/skills"), str(CORPORA / "scientific-skills/scientific-skills"),
         str(CORPORA / "awesome-skills/skills")]
SYSTEM = "You are a helpful assistant."
K = 5
TURNS = (
    "Build an MCP server that exposes our billing API as tools",
    "Now write browser tests for the server's web pages with Playwright",
    "Switch topic: I have single-cell RNA-seq counts, how do I cluster the cells?",
    "Plot the UMAP of those clusters and save it as a figure",
    "Review this pull request for security vulnerabilities",
    "Write the changelog entry for this release",
    "Design a landing page for our new product",
    "Make an animated GIF for Slack celebrating the launch",
)


def main() -> None:
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import StructuredTool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from router.adapters.langchain import SkillRouterMiddleware

    counter = TokenCounter("cl100k_base")
    start = time.perf_counter()
    router = Router.from_skills(ROOTS, "agentskills", RouterConfig(k=K),
                                index_folder=str(ROOT / "benchmarks" / ".index" / "adapter_tokens"))
    build_s = time.perf_counter() - start

    tools: list[Any] = []
    for skill in router.skills:
        def load(name: str = skill.name) -> str:
            return name

        tools.append(StructuredTool.from_function(load, name=skill.id, description=skill.description))

    def web_search(query: str) -> str:
        """Search the web for a query."""
        return query

    tools.append(StructuredTool.from_function(web_search))
    definition = {t.name: counter.count(json.dumps(convert_to_openai_tool(t), separators=(",", ":")))
                  for t in tools}

    def converse(middleware: list[Any]) -> list[dict[str, Any]]:
        calls: list[dict[str, Any]] = []

        class Recording(GenericFakeChatModel):
            def bind_tools(self, bound: Any, **kwargs: Any) -> Any:
                calls.append({"tools": [t.name for t in bound]})
                return self

            def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
                system = messages[0].content if messages[0].type == "system" else ""
                calls[-1]["system"] = system
                return super()._generate(messages, *args, **kwargs)

        model = Recording(messages=iter([AIMessage(content=f"answer {i}") for i in range(len(TURNS))]))
        agent = create_agent(model, tools=tools, system_prompt=SYSTEM, middleware=middleware)
        state: dict[str, Any] = {"messages": []}
        timings = []
        for text in TURNS:
            began = time.perf_counter()
            state = agent.invoke({"messages": [*state["messages"], HumanMessage(content=text)]})
            timings.append(time.perf_counter() - began)
        rows = []
        for turn, (text, call, seconds) in enumerate(zip(TURNS, calls, timings), start=1):
            added = call["system"][len(SYSTEM):].lstrip("\n") if call["system"] != SYSTEM else ""
            tool_tokens = sum(definition[name] for name in call["tools"])
            context_tokens = counter.count(added) if added else 0
            rows.append({"turn": turn, "request": text, "tools": len(call["tools"]), "tool_tokens": tool_tokens,
                         "context_tokens": context_tokens, "total": tool_tokens + context_tokens,
                         "invoke_ms": round(seconds * 1000, 1),
                         "skill_tools": [n for n in call["tools"] if n != "web_search"] if middleware else None})
        return rows

    without = converse([])
    with_adapter = converse([SkillRouterMiddleware(router)])
    full_catalogue = counter.count(router.profile.render(list(router.skills)))
    print(f"{len(router.skills)} skills as tools (+1 own tool); index built in {build_s:.1f} s; the full "
          f"agentskills catalogue is {full_catalogue} tokens")
    print(f"{'turn':>4}  {'without':>8}  {'with: tools':>11}  {'+ context':>9}  {'= total':>8}  routed skill tools")
    for plain, routed in zip(without, with_adapter):
        print(f"{plain['turn']:>4}  {plain['total']:>8}  {routed['tool_tokens']:>11}  {routed['context_tokens']:>9}  "
              f"{routed['total']:>8}  {', '.join(routed['skill_tools'])}")
    mean_without = statistics.mean(r["total"] for r in without)
    mean_with = statistics.mean(r["total"] for r in with_adapter)
    summary = {"skills": len(router.skills), "k": K, "turns": len(TURNS), "index_build_s": round(build_s, 2),
               "full_catalogue_tokens": full_catalogue,
               "mean_tokens_without": round(mean_without, 1), "mean_tokens_with": round(mean_with, 1),
               "saving": round(1 - mean_with / mean_without, 4),
               "conversation_tokens_without": sum(r["total"] for r in without),
               "conversation_tokens_with": sum(r["total"] for r in with_adapter),
               "mean_invoke_ms_without": round(statistics.mean(r["invoke_ms"] for r in without), 1),
               "mean_invoke_ms_with": round(statistics.mean(r["invoke_ms"] for r in with_adapter), 1)}
    print(json.dumps(summary, indent=1))
    save("adapter_tokens", {"framework": "langchain", "encoding": "cl100k_base", "summary": summary,
                            "without": without, "with": with_adapter})


if __name__ == "__main__":
    main()
