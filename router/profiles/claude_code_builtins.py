"""What Claude Code 2.1.332 ships: its built-in skills as its listing shows them, its ``Skill`` tool, and every
built-in command and bundled skill name that tool knows, with what it answers for each.

Read off the requests the real binary sent to a loopback fake Messages API (tests/test_oracle_claude_code.py checks
them on every run). The built-in lines are listed after the user's skills, in this order, exactly as written here
(no escaping, line breaks kept); ``init`` and ``security-review`` are built-in commands, which lose their
descriptions over budget like the user's skills, while the others always keep their full lines. A user's skill of
the same name replaces the built-in one.
"""

from __future__ import annotations

import enum

#: (name, description, keeps its full line over budget)
BUILTIN_SKILLS: tuple[tuple[str, str, bool], ...] = (
    ('dataviz',
     'Use this skill whenever you are about to create ANY chart, graph, plot, dashboard, or data visualiza'
     'tion, in ANY output medium — an HTML or React artifact, inline SVG, plotting code in any library (ma'
     'tplotlib, plotly, d3, Recharts, …), an image/PNG you will render and upload, or a chart shared into '
     'Slack. Read it BEFORE writing the first line of chart code, choosing chart colors, building a stat t'
     'ile / meter / KPI row, or laying out a dashboard. When the destination is a first-party document con'
     'nector (host-designated, never self-described) that renders live charts, hand it the rows (inline, o'
     'r as an uploaded data file the chart cites) rather than a rendered PNG/SVG — a picture of a chart lo'
     'ses hover, data inspection and per-value comments. Produces visualizations that read as one system —'
     ' elegant, accessible, consistent in light and dark — using a brand-neutral placeholder palette you s'
     'wap for your own. Teaches a design-system-agnostic method: a form heuristic, a color formula with a '
     'runnable validator, mark specs, and interaction rules. A validated default palette is documented in '
     '`references/palette.md` — swap that file\'s values for your brand\'s. Triggers on: "chart", "graph", "'
     'plot", "data viz", "visualization", "dashboard", "analytics", "visualize data", "categorical colors"'
     ', "sequential / diverging palette", "stat tile", "sparkline", "heatmap", "legend", "axis", "tooltip"'
     ', "chart colors", "color by series".',
     True),
    ('update-config',
     'Use this skill to configure the Claude Code harness via settings.json. Automated behaviors ("from no'
     'w on when X", "each time X", "whenever X", "before/after X") require hooks configured in settings.js'
     'on - the harness executes these, not Claude, so memory/preferences cannot fulfill them. Also use for'
     ': permissions ("allow X", "add permission", "move permission to"), env vars ("set X=Y"), hook troubl'
     'eshooting, or any changes to settings.json/settings.local.json files. Examples: "allow npm commands"'
     ', "add bq permission to global settings", "move permission to user settings", "set DEBUG=true", "whe'
     'n claude stops show X". For simple settings like theme/model, suggest the /config command.',
     True),
    ('keybindings-help',
     'Use when the user wants to customize keyboard shortcuts, rebind keys, add chord bindings, or modify '
     '~/.claude/keybindings.json. Examples: "rebind ctrl+s", "add a chord shortcut", "change the submit ke'
     'y", "customize keybindings".',
     True),
    ('code-review',
     'Review the current diff, or a PR number/branch/path target, for correctness bugs (plus broken CLAUDE'
     ".md rules and cleanups where the model's recipe covers them; see /simplify) at the effort level give"
     'n first, before any target (low|medium|high|xhigh|max: from few high-confidence findings to many, so'
     'me uncertain); with no level given, it reuses the level you typed last. Pass --comment to post findi'
     'ngs as inline PR comments, or --fix to apply them to the working tree after the review. Pass --max-f'
     'indings <n> to report up to n findings, or --max-findings all for every finding. The choice stays un'
     'til you pass --max-findings default. - Use the max level only when the user, or instructions such as'
     ' CLAUDE.md or a skill, explicitly ask for it, never on your own judgment: it is the costliest level '
     'and starts many reviewer subagents.',
     True),
    ('simplify',
     'Review the changed code for reuse, simplification, efficiency, and altitude cleanups, then apply the'
     ' fixes. Quality only — it does not hunt for bugs; use /code-review for that.',
     True),
    ('fewer-permission-prompts',
     'Scan your transcripts for common read-only Bash and MCP tool calls, then add a prioritized allowlist'
     ' to project .claude/settings.json to reduce permission prompts.',
     True),
    ('loop',
     'Run a prompt or slash command on a recurring interval (e.g. /loop 5m /foo). Omit the interval to let'
     ' the model self-pace. - When the user wants to set up a recurring task, poll for status, or run some'
     'thing repeatedly on an interval (e.g. "check the deploy every 5 minutes", "keep running /babysit-prs'
     '"). Do NOT invoke for one-off tasks.',
     True),
    ('claude-api',
     'Reference for the Claude API / Anthropic SDK — model ids, pricing, params, streaming, tool use, MCP,'
     ' agents, caching, token counting, model migration.\nTRIGGER — read FIRST, before you answer, run a co'
     'mmand or open a file (already started? read it now); don\'t skip because it "looks like a one-liner" '
     '— whenever: the prompt names Claude/Anthropic in any form (Claude, Anthropic, Fable, Opus, Sonnet, H'
     'aiku, `anthropic`, `@anthropic-ai`, `claude-*`, `us.anthropic.*`, `[1m]`); the user asks about an LL'
     'M (pricing/model choice/limits/caching) — never answer from memory; OR the task is LLM-shaped with p'
     'rovider unstated (agent/MCP/tool-definition/multi-agent/RAG/LLM-judge/computer-use; generate/summari'
     'ze/extract/classify/rewrite/converse over NL; debugging refusals/cutoffs/streaming/tool-calls/tokens'
     ').\nSKIP only when another provider is being worked on (overrides all triggers): OpenAI/GPT/Gemini/Ll'
     "ama/Mistral/Cohere/Ollama named in the query; OR `grep -rE 'openai|langchain_openai|google.generativ"
     "eai|genai|mistralai|cohere|ollama'` over the project hits (run this grep FIRST if no provider named "
     "— don't Read the file; if nothing hits, load this skill).",
     True),
    ('workflow-authoring',
     'Reference for writing a Workflow tool script (script API and gotchas, resume, quality patterns, work'
     'ed examples). Load before authoring a script for a workflow the user already opted into; it does not'
     ' itself authorize running one.',
     True),
    ('run',
     "Launch and drive this project's app to see a change working. Use when asked to run, start, or screen"
     'shot the app, or to confirm a change works in the real app (not just tests). First looks for a proje'
     'ct skill that already covers launching the app; otherwise falls back to built-in patterns per projec'
     't type (CLI, server, TUI, Electron, browser-driven, library).',
     True),
    ('plugin-authoring',
     "Make a mod: a change to Claude's own interface or behaviour, such as a theme, a panel or pane that s"
     'tays beside the chat and updates, a band, status line, toast, slash command, or hook on tool calls. '
     'Use to make, change or debug a mod or its hooks module.',
     True),
    ('init',
     'Initialize a new CLAUDE.md file with codebase documentation',
     False),
    ('security-review',
     'Complete a security review of the pending changes on the current branch',
     False),
)

SKILL_TOOL_DESCRIPTION = (
    'Invoke a skill.\n\nA skill is a packaged set of instructions the user or project has set up for a part'
    'icular kind of task (deploy steps, a review checklist, a repo-specific workflow). Available skills a'
    'ppear in a listing from the system with one-line descriptions. When the task at hand is one a listed'
    " skill covers, call this tool first — the skill's instructions load into the turn for you to follow "
    'in place of your default approach; some skills instead run in a subagent and return the finished res'
    "ult. A skill that runs in the background returns only the agent's name — its result arrives later as"
    " a task notification, so don't wait on it or invoke it again in the meantime. Users may also ask for"
    ' one by name (`/<name>`, or "slash command"); that\'s a request to invoke it.\n\n- `skill`: exact name '
    'from the listing, no leading slash. Plugin skills use `plugin:skill`. Directory-scoped skills are li'
    'sted with a path prefix (`apps/web:deploy`); when both scoped and unscoped variants of a name exist,'
    " pick the one whose directory contains the files you're working on (most specific wins; unscoped oth"
    'erwise).\n- `args`: optional arguments to pass through.\n\nOnly names from the listing (or that the use'
    "r typed explicitly) are valid. Built-in CLI commands (`/help`, `/clear`, …) aren't skills. If a `<co"
    'mmand-name>` block is already present this turn, the skill is loaded — follow it directly rather tha'
    'n calling again.\n'
)

SKILL_TOOL_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "skill": {
            "description": "The name of a skill from the available-skills list. Do not guess names.",
            "type": "string"
        },
        "args": {
            "description": "Optional arguments for the skill",
            "type": "string"
        }
    },
    "required": [
        "skill"
    ],
    "additionalProperties": False
}

#: The names, besides the user's skills, that the ``Skill`` tool's ``Did you mean X?`` draws on for an unknown
#: name, in the order it tries them (where two are equally near the first wins): Claude Code's bundled skills, then
#: its built-in commands in the order of its command table, each command's aliases right after it. Every name the
#: 2.1.332 binary resolves (found by calling the ``Skill`` tool with each name-like string in its JavaScript, 41,600
#: of them, and the order checked on 430 names equally near two of these) in a ``-p`` run signed in with an API key
#: (commands for claude.ai accounts, desktop, cloud or experiments are not enabled there). The order of
#: ``keybindings-help``, ``subtask``, ``recap``, ``login``, ``list-agents`` and ``workflows`` is read off the command
#: table and not confirmed by a tie.
SUGGESTED_NAMES: tuple[str, ...] = (
    'deep-research', 'dataviz', 'update-config', 'keybindings-help', 'verify', 'debug', 'code-review', 'review',
    'simplify', 'batch', 'fewer-permission-prompts', 'doctor', 'checkup', 'loop', 'proactive', 'claude-api',
    'workflow-authoring', 'run', 'run-skill-generator', 'plugin-authoring', 'add-dir', 'agents', 'auto-mode-setup',
    'autocompact', 'fork', 'branch', 'btw', 'cd', 'clear', 'reset', 'new', 'color', 'compact', 'config', 'settings',
    'subtask', 'output-style', 'copy', 'context', 'diff', 'background', 'bg', 'effort', 'exit', 'quit', 'fast',
    'focus', 'heapdump', 'help', 'ide', 'init', 'keybindings', 'mcp', 'memory', 'mobile', 'ios', 'android', 'model',
    '__remote-workflow', 'workflow-launch-exec', 'plugin', 'plugins', 'marketplace', 'release-notes',
    'reload-plugins', 'reload-skills', 'rename', 'name', 'resume', 'continue', 'security-review', 'setup-bedrock',
    'setup-vertex', 'skills', 'status', 'statusline', 'stickers', 'theme', 'tui', 'feedback', 'bug', 'share',
    'rewind', 'checkpoint', 'undo', 'terminal-setup', 'scroll-speed', 'pro-trial-expired', 'usage', 'cost', 'stats',
    'insights', 'recap', 'permissions', 'allowed-tools', 'plan', 'powerup', 'goal', 'hooks', 'export', 'sandbox',
    'login', 'logout', 'passes', 'list-agents', 'peers', 'tasks', 'bashes', 'team-onboarding', 'radio', 'workflows',
)

#: Names in :data:`SUGGESTED_NAMES` that are another command's aliases -> that command: a skill in a folder of an
#: alias's name takes nothing away, one in a folder of a command's own name takes the command and its aliases (a
#: ``plan`` folder leaves no ``plan`` to suggest, an ``exit`` folder no ``exit`` and no ``quit``). Calling an alias
#: gets the command's answer under the name called (the permission rule it offers names the command).
SUGGESTED_ALIASES: dict[str, str] = {
    'review': 'code-review', 'checkup': 'doctor', 'proactive': 'loop', 'reset': 'clear', 'new': 'clear',
    'settings': 'config', 'bg': 'background', 'quit': 'exit', 'ios': 'mobile', 'android': 'mobile',
    'plugins': 'plugin', 'marketplace': 'plugin', 'name': 'rename', 'continue': 'resume', 'share': 'bug',
    'checkpoint': 'rewind', 'undo': 'rewind', 'cost': 'usage', 'stats': 'usage', 'allowed-tools': 'permissions',
    'peers': 'list-agents', 'bashes': 'tasks',
}


class Answer(str, enum.Enum):
    """What the ``Skill`` tool answers when called with the exact name of a built-in command or bundled skill."""

    UI = "ui"  # ``X is a UI command, not a skill. ...`` (an error)
    CLI = "cli"  # ``X is a built-in CLI command, not a skill. ...`` (an error)
    MODEL_DISABLED = "model-disabled"  # the ``disable-model-invocation`` error
    ASKS = "asks"  # asks the user first: ``Execute skill: X. ...`` (an error when nobody can answer, as in ``-p``)
    LOADS = "loads"  # ``Launching skill: X`` and Claude Code's own instructions
    FORKS = "forks"  # runs in a subagent: ``Skill "X" completed (forked execution).`` and the subagent's answer


#: Each built-in command and bundled skill of :data:`SUGGESTED_NAMES` (aliases answer as their command) -> what the
#: ``Skill`` tool answers for it (2.1.332, ``-p``, default permission mode, no allow rules).
BUILTIN_ANSWERS: dict[str, Answer] = {
    'add-dir': Answer.UI, 'fork': Answer.UI, 'branch': Answer.UI, 'btw': Answer.UI, 'cd': Answer.UI,
    'color': Answer.UI, 'config': Answer.UI, 'subtask': Answer.UI, 'copy': Answer.UI, 'diff': Answer.UI,
    'background': Answer.UI, 'effort': Answer.UI, 'exit': Answer.UI, 'fast': Answer.UI, 'focus': Answer.UI,
    'help': Answer.UI, 'ide': Answer.UI, 'mcp': Answer.UI, 'memory': Answer.UI, 'mobile': Answer.UI,
    'model': Answer.UI, 'plugin': Answer.UI, 'release-notes': Answer.UI, 'rename': Answer.UI, 'resume': Answer.UI,
    'setup-bedrock': Answer.UI, 'setup-vertex': Answer.UI, 'skills': Answer.UI, 'status': Answer.UI,
    'theme': Answer.UI, 'tui': Answer.UI, 'feedback': Answer.UI, 'bug': Answer.UI, 'terminal-setup': Answer.UI,
    'scroll-speed': Answer.UI, 'pro-trial-expired': Answer.UI, 'usage': Answer.UI, 'permissions': Answer.UI,
    'plan': Answer.UI, 'powerup': Answer.UI, 'goal': Answer.UI, 'hooks': Answer.UI, 'export': Answer.UI,
    'sandbox': Answer.UI, 'login': Answer.UI, 'logout': Answer.UI, 'passes': Answer.UI, 'tasks': Answer.UI,
    'workflows': Answer.UI,
    'agents': Answer.CLI, 'auto-mode-setup': Answer.CLI, 'autocompact': Answer.CLI, 'clear': Answer.CLI,
    'compact': Answer.CLI, 'output-style': Answer.CLI, 'context': Answer.CLI, 'heapdump': Answer.CLI,
    'keybindings': Answer.CLI, 'reload-plugins': Answer.CLI, 'reload-skills': Answer.CLI, 'stickers': Answer.CLI,
    'rewind': Answer.CLI, 'recap': Answer.CLI, 'list-agents': Answer.CLI, 'radio': Answer.CLI,
    'deep-research': Answer.MODEL_DISABLED, 'verify': Answer.MODEL_DISABLED, 'debug': Answer.MODEL_DISABLED,
    'batch': Answer.MODEL_DISABLED, 'doctor': Answer.MODEL_DISABLED, 'run-skill-generator': Answer.MODEL_DISABLED,
    '__remote-workflow': Answer.MODEL_DISABLED, 'workflow-launch-exec': Answer.MODEL_DISABLED,
    'statusline': Answer.MODEL_DISABLED, 'insights': Answer.MODEL_DISABLED,
    'team-onboarding': Answer.MODEL_DISABLED,
    'update-config': Answer.ASKS, 'keybindings-help': Answer.ASKS, 'fewer-permission-prompts': Answer.ASKS,
    'loop': Answer.ASKS, 'claude-api': Answer.ASKS, 'security-review': Answer.ASKS,
    'dataviz': Answer.LOADS, 'simplify': Answer.LOADS, 'workflow-authoring': Answer.LOADS, 'run': Answer.LOADS,
    'plugin-authoring': Answer.LOADS, 'init': Answer.LOADS,
    'code-review': Answer.FORKS,
}
