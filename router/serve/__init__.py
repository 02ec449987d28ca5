"""skill-router as a long-running service: HTTP, MCP, prompt hooks and a decision log.

    service.py   the warm router behind every surface: atomic swaps on reload, micro-batched routing
    app.py       the FastAPI application (``skill-router serve``): /v1 endpoints, security, errors, metrics
    schemas.py   request bodies and their bounds
    mcp.py       the MCP server (mounted at /mcp, and ``skill-router mcp`` on stdio)
    mcp_skills.py     the skill folders as MCP resources: skill:// paths, manifests with digests, confined reads
    mcp_extension.py  the MCP Skills extension's methods (skills/list, skills/get, resources/directory/read)
    hooks.py     ``UserPromptSubmit`` hooks for Claude Code and Codex (stdlib only: a hook must start fast)
    log.py       the decision log, and learning / evaluating from it
    reload.py    watching the skill folders
    metrics.py   Prometheus counters and histograms

Nothing here is imported by ``import router``; FastAPI, uvicorn, mcp and the embedding stack load only when a
server starts.
"""
