"""Adapters that put the router in front of the agent frameworks people build with.

One module per framework, each an optional extra imported only when asked for::

    router.adapters.langchain         pip install 'skill-router[langchain]'         SkillRouterMiddleware
    router.adapters.pydantic_ai       pip install 'skill-router[pydantic-ai]'       SkillRouterCapability
    router.adapters.openai_agents     pip install 'skill-router[openai-agents]'     SkillRouterAgents
    router.adapters.claude_agent_sdk  pip install 'skill-router[claude-agent-sdk]'  SkillRouterHook
    router.adapters.google_adk        pip install 'skill-router[google-adk]'        SkillRouterCallback

``pip install 'skill-router[adapters]'`` installs all five. Each takes a :class:`router.Router` or the URL of a
running ``skill-router serve``; what they share (which text is routed, which tools are kept, the text added to
the instructions) is :mod:`router.adapters.base`. Importing this package imports no framework.
"""

from __future__ import annotations
