"""Loopback fakes of the services the tests talk to, each speaking the documented API; nothing leaves 127.0.0.x.

- `loopback`: the plumbing every fake shares: `QuietServer` (threads, no noise when a client hangs up),
  `serve(handler, host)` / `loopback_server(handler)` context managers, `start(server)`, and `Responder`
  (a handler with `send`, `send_json`, `send_text`, `read_json` and no access log).
- `search_apis`: SearXNG (`/search`), Brave Search (`/res/v1/web/search`), Google Programmable Search
  (`/customsearch/v1`) and Context7 (`/api/v2/libs/search`, `/api/v2/context`, `/api/v1/<id>`), with
  per-path failure modes (429 + Retry-After, 500, 401, 404, 202).
- `llm_apis`: OpenAI chat completions (`/v1/chat/completions`) and Anthropic Messages (`/v1/messages`),
  answering replies the test queues (recorded replies in tests/research/llm_replies).
- `webhooks`: a webhook receiver recording each JSON POST (the review notifier's target).
- `research_site`: a web site with every awkward case a fetcher meets (robots.txt, ETag/304, PDF,
  redirects to private addresses and loops, slow, flaky 500, 429, 503, endless bodies, mislabelled
  types, bot challenges, login walls, legacy encodings) plus a trap host on 127.0.0.2.
- `static_site`: the browser tools' site (forms, tables, late content, tabs, downloads, images, a
  hanging image, coloured boxes for screenshot comparison).
- `process_worker`: a Prefect process worker played in the test: `process_pool()`, and a flow run
  executed as the worker starts it (`python -m prefect.engine` in its folder, with its merged env job
  variables) and read back once final (`run_as_worker`, `trigger_as_worker`).

Handlers that one test alone needs (a gzip bomb, a keep-alive counter, a redirect to a malformed URL)
stay in that test, served through `loopback`.
"""
