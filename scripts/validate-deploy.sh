#!/usr/bin/env bash
# Validates everything under deploy/ without running Docker or a cluster:
#
#   Dockerfile          build context (Dockerfile.dockerignore) holds every COPY source, every
#                       workspace member and every include_str! file; non-root user, entrypoint
#   docker-compose.yml  `docker-compose config -q`, with and without `--profile demo`
#                       (Debian's docker-compose 1.29.2, which validates against the compose spec)
#   prometheus/         `promtool check config`, `promtool check rules`, `promtool test rules`
#   grafana/            json.tool, structure, PromQL syntax of every query (promtool), metric names
#   k8s/                kubernetes-validate --strict (core kinds), a schema check of the KEDA and
#                       Prometheus Operator resources (subset of their CRDs, kept in this file),
#                       kustomization completeness (and `kubectl kustomize` when kubectl exists),
#                       the ConfigMap's evalfleet.yaml against config/evalfleet.yaml
#   everything          yamllint (syntax, duplicate keys), shellcheck of this script, and that
#                       every metric the dashboard and the alerts use is one evalfleet exports
#
# Installs what it needs, idempotently: Debian packages docker-compose, prometheus (promtool),
# yamllint, shellcheck; kubernetes-validate from PyPI into a venv (EVALFLEET_VALIDATE_VENV,
# default /tmp/evalfleet-validate-venv). Runs every check, then exits 1 if any failed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${EVALFLEET_VALIDATE_VENV:-/tmp/evalfleet-validate-venv}
KUBERNETES_VALIDATE_VERSION=1.37.0
K8S_VERSIONS=(1.30 1.37)   # oldest and newest Kubernetes minor the manifests are checked against

failures=()
log() { printf '\n== %s\n' "$*"; }
ok() { printf '  ok: %s\n' "$*"; }
fail() {
  printf '  FAIL: %s\n' "$*" >&2
  failures+=("$*")
}
# check NAME CMD...: runs CMD, records NAME as failed if it fails.
check() {
  local name=$1
  shift
  if "$@"; then ok "$name"; else fail "$name"; fi
}
# pycheck NAME ARGS... <<'PY' ... PY: runs a Python check (the venv's python: PyYAML, jsonschema).
pycheck() {
  local name=$1
  shift
  if "$PY" - "$@"; then ok "$name"; else fail "$name"; fi
}

# ------------------------------------------------------------------------------------ tools
log "tools"
SUDO=()
if [ "$(id -u)" -ne 0 ]; then SUDO=(sudo); fi
apt_updated=
apt_install() {
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "  installing ${missing[*]}"
  if [ -z "$apt_updated" ]; then "${SUDO[@]}" apt-get update -qq; apt_updated=1; fi
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
# docker-compose: Debian's v1 (1.29.2 on bookworm); it supports profiles and the compose spec.
# prometheus: the only Debian package that ships promtool (its service is not needed).
apt_install docker-compose prometheus yamllint shellcheck

if ! "$VENV/bin/pip" show kubernetes-validate 2>/dev/null | grep -qx "Version: $KUBERNETES_VALIDATE_VERSION"; then
  echo "  installing kubernetes-validate $KUBERNETES_VALIDATE_VERSION into $VENV"
  python3 -m venv "$VENV" 2>/dev/null || { apt_install python3-venv; python3 -m venv "$VENV"; }
  "$VENV/bin/pip" install -q --disable-pip-version-check "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
fi
PY=$VENV/bin/python
echo "  $(docker-compose version --short 2>/dev/null || docker-compose version | head -n1) (docker-compose)"
echo "  $(promtool --version 2>&1 | head -n1)"
echo "  kubernetes-validate $("$VENV/bin/kubernetes-validate" --version)"
echo "  $(yamllint --version), shellcheck $(shellcheck --version | sed -n 's/^version: //p')"

# ------------------------------------------------------------------------------------ YAML
log "yaml (syntax, duplicate keys)"
mapfile -t yaml_files < <(find deploy -name '*.yml' -o -name '*.yaml' | sort)
check "yamllint (${#yaml_files[@]} files)" \
  yamllint -f parsable -d '{extends: relaxed, rules: {line-length: disable}}' "${yaml_files[@]}"

# ------------------------------------------------------------------------------------ Dockerfile
log "Dockerfile and its build context"
pycheck "build context holds what the build and the image need" "$ROOT" <<'PY'
import os, re, sys, tomllib
root = sys.argv[1]
os.chdir(root)
problems = []

def glob_re(p):
    # Docker's .dockerignore patterns (moby/patternmatcher): ** any dirs, * and ? within one.
    i, out = 0, ""
    while i < len(p):
        if p.startswith("**/", i): out += "(?:.*/)?"; i += 3; continue
        if p.startswith("**", i): out += ".*"; i += 2; continue
        c = p[i]
        if c == "*": out += "[^/]*"
        elif c == "?": out += "[^/]"
        elif c == "[":
            j = p.index("]", i); out += p[i:j + 1]; i = j + 1; continue
        else: out += re.escape(c)
        i += 1
    return re.compile("^" + out + "$")

patterns = []
for line in open("deploy/Dockerfile.dockerignore"):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    excl = line.startswith("!")
    line = os.path.normpath(line.lstrip("!").strip()).lstrip("/")
    patterns.append((excl, glob_re(line)))

def ignored(rel):
    parts = rel.split("/")
    prefixes = ["/".join(parts[:i + 1]) for i in range(len(parts))]
    matched = False
    for excl, rx in patterns:          # the last matching pattern wins; a dir pattern covers its files
        if any(rx.match(p) for p in prefixes):
            matched = not excl
    return matched

context = set()
for d, dirs, files in os.walk("."):
    dirs[:] = [x for x in dirs if x not in (".git",) and not (d == "." and x == "target")]
    for f in files:
        rel = os.path.normpath(os.path.join(d, f))
        if not ignored(rel):
            context.add(rel)

def in_context(path):
    path = os.path.normpath(path)
    return path in context or any(c.startswith(path + "/") for c in context)

dockerfile = open("deploy/Dockerfile").read()
lines = re.sub(r"\\\n", " ", dockerfile).splitlines()
stages = [m.group(1) for l in lines if (m := re.match(r"FROM\s+\S+\s+AS\s+(\S+)", l, re.I))]
for l in lines:
    m = re.match(r"COPY\s+(.*)", l)
    if not m or "--from=" in l:
        continue
    srcs = m.group(1).split()[:-1]
    for s in srcs:
        if s != "." and not in_context(s):
            problems.append(f"COPY source {s} is not in the build context")
if stages[-1] != "runtime":
    problems.append(f"the last stage (the default target) is {stages[-1]}, not runtime")
for stage in ("builder", "runtime"):
    if stage not in stages:
        problems.append(f"stage {stage} missing")
runtime = dockerfile.split("AS runtime", 1)[-1]
if not re.search(r"^USER 10001:10001$", runtime, re.M):
    problems.append("runtime stage does not run as USER 10001:10001")
if 'ENTRYPOINT ["evalfleet"]' not in runtime:
    problems.append('runtime ENTRYPOINT is not ["evalfleet"]')
if "COPY --from=builder /out/evalfleet /usr/local/bin/evalfleet" not in runtime:
    problems.append("the binary is not installed as /usr/local/bin/evalfleet")
if "EVALFLEET_CONFIG=/etc/evalfleet/evalfleet.yaml" not in runtime:
    problems.append("EVALFLEET_CONFIG is not /etc/evalfleet/evalfleet.yaml")
if "--locked" not in dockerfile:
    problems.append("cargo build is not --locked")

# Everything cargo needs: the workspace manifests, every member's manifest and sources, and
# every file an include_str!/include_bytes! in those sources names.
for f in ("Cargo.toml", "Cargo.lock", "src/main.rs"):
    if f not in context:
        problems.append(f"{f} is not in the build context")
members = tomllib.load(open("Cargo.toml", "rb"))["workspace"]["members"]
for m in members:
    for f in (f"{m}/Cargo.toml", f"{m}/src"):
        if not in_context(f):
            problems.append(f"workspace member file {f} is not in the build context")
for rel in sorted(context):
    if rel.endswith(".rs"):
        for inc in re.findall(r'include_(?:str|bytes)!\(\s*"([^"]+)"', open(rel, errors="replace").read()):
            target = os.path.normpath(os.path.join(os.path.dirname(rel), inc))
            if target not in context:
                problems.append(f"{rel} includes {target}, which is not in the build context")
for f in ("config/evalfleet.yaml", "examples/support-judge.jsonl"):
    if f not in context:
        problems.append(f"{f} (copied into the image) is not in the build context")
leaks = sorted(c for c in context if c.startswith(("target/", "reports/", "out/", ".git/")) or "/target/" in c)
if leaks:
    problems.append(f"build output in the context: {leaks[:5]}")
for p in problems:
    print("   ", p)
print(f"    context: {len(context)} files, stages: {', '.join(stages)}")
sys.exit(1 if problems else 0)
PY

# ------------------------------------------------------------------------------------ compose
log "docker-compose.yml"
check "docker-compose config" docker-compose -f deploy/docker-compose.yml config -q
check "docker-compose --profile demo config" docker-compose -f deploy/docker-compose.yml --profile demo config -q
compose_json=$(mktemp)
trap 'rm -f "$compose_json"' EXIT
if docker-compose -f deploy/docker-compose.yml --profile demo config > "$compose_json" 2>/dev/null; then
  pycheck "compose services are wired as intended" "$ROOT" "$compose_json" <<'PY'
import sys, yaml
root, path = sys.argv[1], sys.argv[2]
c = yaml.safe_load(open(path))
s = c["services"]
problems = []
want = {"rabbitmq", "redis", "aggregator", "worker", "prometheus", "grafana",
        "fake-provider", "submit-demo", "load-demo"}
if set(s) != want:
    problems.append(f"services {sorted(set(s) ^ want)} unexpected or missing")
for name in ("aggregator", "worker", "fake-provider", "submit-demo", "load-demo"):
    b = s[name].get("build", {})
    if b.get("context") != root or b.get("dockerfile") != "deploy/Dockerfile":
        problems.append(f"{name} is not built from deploy/Dockerfile with the repository root as context: {b}")
if s["worker"].get("deploy", {}).get("replicas") != 2:
    problems.append("worker replicas != 2")
if "0.0.0.0:9464" not in s["worker"]["command"]:
    problems.append("worker metrics are not on 0.0.0.0:9464")
if "0.0.0.0:8080" not in s["aggregator"]["command"]:
    problems.append("aggregator does not listen on 0.0.0.0:8080")
if "--appendonly" not in s["redis"]["command"] or "yes" not in s["redis"]["command"]:
    problems.append("redis without AOF")
if not s["rabbitmq"]["image"].startswith("rabbitmq:4") or "management" not in s["rabbitmq"]["image"]:
    problems.append("rabbitmq is not a 4.x management image")
if not any(str(v).endswith("/etc/rabbitmq/conf.d/20-evalfleet.conf:ro") or
           (isinstance(v, dict) and v.get("target") == "/etc/rabbitmq/conf.d/20-evalfleet.conf")
           for v in s["rabbitmq"].get("volumes", [])):
    problems.append("rabbitmq does not mount deploy/rabbitmq/20-evalfleet.conf (the Ra WAL size)")
for name in ("rabbitmq", "redis"):
    if "healthcheck" not in s[name]:
        problems.append(f"{name} has no healthcheck")
for name in ("fake-provider", "submit-demo", "load-demo"):
    if s[name].get("profiles") != ["demo"]:
        problems.append(f"{name} is not in the demo profile only")
for name in ("rabbitmq", "redis", "aggregator", "worker", "prometheus", "grafana"):
    if s[name].get("profiles"):
        problems.append(f"{name} should run without a profile")
demo_env = {"EVALFLEET_PROVIDERS__OPENAI__BASE_URL": "http://fake-provider:8089/v1",
            "EVALFLEET_PROVIDERS__ANTHROPIC__BASE_URL": "http://fake-provider:8089",
            "OPENAI_API_KEY": "demo-key", "ANTHROPIC_API_KEY": "demo-key"}
for name in ("worker", "submit-demo", "load-demo"):
    env = s[name].get("environment", {})
    for k, v in demo_env.items():
        if env.get(k) != v:
            problems.append(f"{name}: {k}={env.get(k)!r}, want {v!r}")
    for k in ("EVALFLEET_AMQP_URL", "EVALFLEET_REDIS_URL"):
        if k not in env:
            problems.append(f"{name}: {k} missing")
if s["submit-demo"]["command"] != ["submit", "/usr/share/evalfleet/examples/support-judge.jsonl",
                                   "--suite", "support-judge", "--judge", "live", "--wait"]:
    problems.append(f"submit-demo command: {s['submit-demo']['command']}")
fp = s["fake-provider"]["command"]
if "--api-key" not in fp or fp[fp.index("--api-key") + 1] != "demo-key":
    problems.append("fake-provider does not require demo-key")
# The judges' base URLs name fake-provider:8089: it must listen there on the compose network
# itself (--host), with no relay, and its healthcheck must probe that port.
if "--host" not in fp or fp[fp.index("--host") + 1] != "0.0.0.0" or "--port" not in fp or fp[fp.index("--port") + 1] != "8089":
    problems.append(f"fake-provider must run with --host 0.0.0.0 --port 8089: {fp}")
if "/dev/tcp/127.0.0.1/8089" not in " ".join(s["fake-provider"].get("healthcheck", {}).get("test", [])):
    problems.append("the fake-provider healthcheck does not probe port 8089")
for p in s["fake-provider"].get("ports", []):
    host_ip = p.get("host_ip") if isinstance(p, dict) else str(p).split(":")[0]
    if host_ip != "127.0.0.1":
        problems.append(f"fake-provider's host port must bind 127.0.0.1 only: {p}")
mgmt = s["aggregator"].get("environment", {}).get("EVALFLEET_FLEET__MANAGEMENT_URL", "")
if not str(mgmt).startswith("http://") or "@rabbitmq:15672" not in str(mgmt):
    problems.append(f"the aggregator does not read queue depths from rabbitmq's management API: {mgmt!r}")
vols = [str(v) for v in s["prometheus"].get("volumes", [])]
if not any("/etc/prometheus" in v for v in vols):
    problems.append("prometheus config is not mounted")
genv = s["grafana"].get("environment", {})
if str(genv.get("GF_AUTH_ANONYMOUS_ENABLED")).lower() != "true" or genv.get("GF_AUTH_ANONYMOUS_ORG_ROLE") != "Viewer":
    problems.append("grafana anonymous viewer not enabled")
if not str(s["worker"].get("stop_grace_period", "")).rstrip("s").isdigit() or int(str(s["worker"]["stop_grace_period"]).rstrip("s")) <= 30:
    problems.append("worker stop_grace_period must exceed fleet.shutdown_deadline_s (30 s)")
for p in problems:
    print("   ", p)
sys.exit(1 if problems else 0)
PY
fi

# ------------------------------------------------------------------------------------ prometheus
log "prometheus"
check "promtool check config" promtool check config deploy/prometheus/prometheus.yml
check "promtool check rules" promtool check rules deploy/prometheus/alerts.yml
check "promtool test rules (alerts.test.yml)" promtool test rules deploy/prometheus/alerts.test.yml
pycheck "prometheus jobs and rule annotations" <<'PY'
import sys, yaml
problems = []
cfg = yaml.safe_load(open("deploy/prometheus/prometheus.yml"))
jobs = {j["job_name"]: j for j in cfg["scrape_configs"]}
w = jobs.get("evalfleet-worker", {})
sd = (w.get("dns_sd_configs") or [{}])[0]
if sd.get("names") != ["worker"] or sd.get("port") != 9464 or sd.get("type", "SRV") != "A":
    problems.append(f"evalfleet-worker must use dns_sd_configs names [worker], type A, port 9464: {sd}")
a = jobs.get("evalfleet-aggregator", {})
if [t for sc in a.get("static_configs", []) for t in sc["targets"]] != ["aggregator:8080"]:
    problems.append("evalfleet-aggregator must scrape aggregator:8080")
if "alerts.yml" not in cfg.get("rule_files", []):
    problems.append("rule_files does not load alerts.yml")
fp_sd = (jobs.get("fake-provider", {}).get("dns_sd_configs") or [{}])[0]
if fp_sd.get("names") != ["fake-provider"] or fp_sd.get("port") != 8089 or fp_sd.get("type", "SRV") != "A":
    problems.append(f"fake-provider (demo profile) must be scraped through dns_sd_configs names [fake-provider], type A, port 8089: {fp_sd}")
rules = [r for g in yaml.safe_load(open("deploy/prometheus/alerts.yml"))["groups"] for r in g["rules"]]
for r in rules:
    ann = r.get("annotations", {})
    for k in ("summary", "description", "runbook"):
        if not str(ann.get(k, "")).strip():
            problems.append(f"{r['alert']}: annotation {k} missing")
    if "\n" in str(ann.get("runbook", "")).strip():
        problems.append(f"{r['alert']}: the runbook must be one line")
names = {r["alert"] for r in rules}
for want in ("EvalfleetNoProgress", "EvalfleetDeadLetterQueueGrowing", "EvalfleetJudgeRateLimited",
             "EvalfleetJudgeErrors", "EvalfleetWorkerDown"):
    if want not in names:
        problems.append(f"alert {want} missing")
for p in problems:
    print("   ", p)
sys.exit(1 if problems else 0)
PY

# ------------------------------------------------------------------------------------ grafana
log "grafana"
check "dashboard is JSON (python3 -m json.tool)" \
  python3 -m json.tool deploy/grafana/dashboards/evalfleet-fleet.json /dev/null
promql_rules=$(mktemp --suffix=.yml)
trap 'rm -f "$compose_json" "$promql_rules"' EXIT
pycheck "dashboard and provisioning structure" "$promql_rules" <<'PY'
import json, re, sys, yaml
out = sys.argv[1]
problems = []
d = json.load(open("deploy/grafana/dashboards/evalfleet-fleet.json"))
if d.get("title") != "evalfleet — fleet":
    problems.append(f"title is {d.get('title')!r}")
variables = {v["name"]: v for v in d["templating"]["list"]}
want_vars = {"suite": "label_values(evalfleet_examples_processed_total, suite)",
             "provider": "label_values(evalfleet_judge_requests_total, provider)"}
for name, q in want_vars.items():
    v = variables.get(name)
    query = v and (v["query"] if isinstance(v["query"], str) else v["query"].get("query"))
    if query != q:
        problems.append(f"variable {name}: {query!r}, want {q!r}")
    if v and v.get("datasource", {}).get("uid") != "prometheus":
        problems.append(f"variable {name} does not use the prometheus datasource")
panels = [p for p in d["panels"] if p["type"] != "row"]
ids = [p["id"] for p in d["panels"]]
if len(ids) != len(set(ids)):
    problems.append("duplicate panel ids")
exprs = []
for p in panels:
    if p.get("datasource", {}).get("uid") != "prometheus":
        problems.append(f"panel {p['title']!r} does not use the prometheus datasource")
    if not p.get("targets"):
        problems.append(f"panel {p['title']!r} has no query")
    for t in p.get("targets", []):
        if not t.get("expr"):
            problems.append(f"panel {p['title']!r} has an empty query")
        exprs.append((p["title"], t["expr"]))
    g = p["gridPos"]
    if g["x"] + g["w"] > 24:
        problems.append(f"panel {p['title']!r} is wider than the grid")
# The panels the design asks for (docs/DESIGN.md §6), found by their queries.
required = {
    "throughput by outcome": r"sum by \(outcome\) \(rate\(evalfleet_examples_processed_total",
    "judge calls by provider and status": r"sum by \(provider, status\) \(rate\(evalfleet_judge_requests_total",
    "judge latency p50": r"histogram_quantile\(0\.5, .*evalfleet_judge_request_duration_seconds_bucket",
    "judge latency p95": r"histogram_quantile\(0\.95, .*evalfleet_judge_request_duration_seconds_bucket",
    "judge latency p99": r"histogram_quantile\(0\.99, .*evalfleet_judge_request_duration_seconds_bucket",
    "429 rate": r'evalfleet_judge_requests_total\{[^}]*status="429"',
    "retry rate": r"rate\(evalfleet_judge_retries_total",
    "rate-limiter wait": r"rate\(evalfleet_rate_limit_wait_seconds_total",
    "queue depth": r"max by \(queue, state\) \(evalfleet_queue_messages\)",
    "ETA": r'sum\(max by \(state\) \(evalfleet_queue_messages\{queue=~"\.\+\[\.\]examples"\}\)\) / ',
    "workers up": r'count\(up\{job="evalfleet-worker"\} == 1\)',
    "in-flight": r"sum\(evalfleet_worker_inflight\)",
    "run progress": r"evalfleet_run_progress_ratio",
    "pass rate": r"evalfleet_run_pass_ratio",
    "mean scores": r"by \(suite, dimension, model, prompt_version\) \(evalfleet_score_mean",
    "tokens per minute": r"sum by \([^)]*kind\) \(rate\(evalfleet_judge_tokens_total.*\* 60",
    "cost per minute": r"rate\(evalfleet_judge_cost_usd_total.*\* 60",
}
for what, rx in required.items():
    if not any(re.search(rx, e) for _, e in exprs):
        problems.append(f"no panel query for {what} (/{rx}/)")
# Queues by suffix, never by a fixed name: fleet.prefix is configurable.
alert_exprs = [(r["alert"], r["expr"]) for g in yaml.safe_load(open("deploy/prometheus/alerts.yml"))["groups"] for r in g["rules"]]
for title, e in exprs + alert_exprs:
    if re.search(r'queue\s*=\s*"', e):
        problems.append(f"{title!r}: matches a queue by its full name (use queue=~\".+[.]examples\"): {e}")
# $suite / $provider wherever the metric carries that label (the ETA divides the whole queue
# by the whole fleet's rate on purpose).
SUITE = ("evalfleet_examples_processed_total", "evalfleet_score_mean")
PROVIDER = ("evalfleet_judge_requests_total", "evalfleet_judge_request_duration_seconds_bucket",
            "evalfleet_judge_retries_total", "evalfleet_judge_tokens_total",
            "evalfleet_judge_cost_usd_total", "evalfleet_rate_limit_wait_seconds_total")
for title, e in exprs:
    for m in re.finditer(r"\b(evalfleet_[a-z_]+)(\{[^}]*\})?", e):
        metric, sel = m.group(1), m.group(2) or ""
        if metric in SUITE and 'suite=~"$suite"' not in sel and title != "ETA":
            problems.append(f"{title!r}: {metric} without suite=~\"$suite\"")
        if metric in PROVIDER and 'provider=~"$provider"' not in sel:
            problems.append(f"{title!r}: {metric} without provider=~\"$provider\"")
# Every query as a recording rule, for `promtool check rules` (PromQL syntax).
subst = {"$__rate_interval": "1m", "$__interval": "1m", "$__range": "30m",
         "$suite": ".*", "$provider": ".*"}
rules = []
for i, (title, e) in enumerate(exprs + [("variable " + k, f"group by ({k}) ({q.split('(')[1].split(',')[0]})")
                                        for k, q in want_vars.items()]):
    for k in sorted(subst, key=len, reverse=True):
        e = e.replace(k, subst[k])
    if "$" in e:
        problems.append(f"{title!r}: unknown template variable in {e}")
    rules.append({"record": f"dashboard_query_{i}", "expr": e})
yaml.safe_dump({"groups": [{"name": "dashboard-queries", "rules": rules}]}, open(out, "w"))
# Provisioning: the datasource uid the dashboard uses, and the path compose mounts it at.
ds = yaml.safe_load(open("deploy/grafana/provisioning/datasources/prometheus.yml"))["datasources"]
if [x.get("uid") for x in ds] != ["prometheus"] or ds[0].get("url") != "http://prometheus:9090":
    problems.append(f"datasource provisioning: {ds}")
prov = yaml.safe_load(open("deploy/grafana/provisioning/dashboards/evalfleet.yml"))["providers"]
path = prov[0]["options"]["path"]
compose = open("deploy/docker-compose.yml").read()
if f"./grafana/dashboards:{path}:ro" not in compose:
    problems.append(f"dashboards provider path {path} is not where docker-compose.yml mounts deploy/grafana/dashboards")
for p in problems:
    print("   ", p)
print(f"    {len(panels)} panels, {len(exprs)} queries")
sys.exit(1 if problems else 0)
PY
check "dashboard queries parse (promtool check rules)" promtool check rules "$promql_rules"

# ------------------------------------------------------------------------------------ metric names
log "metric names"
pycheck "dashboard and alerts use only exported metrics" <<'PY'
import json, re, sys, yaml
# What evalfleet exports (docs/DESIGN.md §6; worker on --metrics-addr, aggregator on --http-addr /metrics).
WORKER = {
    "evalfleet_examples_processed_total", "evalfleet_example_duration_seconds",
    "evalfleet_judge_requests_total", "evalfleet_judge_request_duration_seconds",
    "evalfleet_judge_retries_total", "evalfleet_judge_tokens_total",
    "evalfleet_judge_cost_usd_total", "evalfleet_rate_limit_wait_seconds_total",
    "evalfleet_worker_inflight", "evalfleet_messages_redelivered_total",
    "evalfleet_messages_dead_lettered_total",
    # Batch mode (judges.mode: batch).
    "evalfleet_batches", "evalfleet_batches_finished_total", "evalfleet_batch_requests",
    "evalfleet_batch_turnaround_seconds", "evalfleet_batch_oldest_running_timestamp_seconds",
    "evalfleet_batch_request_errors_total",
    # Target runs (--target).
    "evalfleet_target_requests_total", "evalfleet_target_duration_seconds",
    "evalfleet_target_tokens_total", "evalfleet_target_cost_usd_total",
}
AGGREGATOR = {
    "evalfleet_run_examples", "evalfleet_run_records", "evalfleet_run_progress_ratio",
    "evalfleet_run_pass_ratio", "evalfleet_queue_messages", "evalfleet_score_mean",
    "evalfleet_reports_written_total",
}
PROCESS = {"process_resident_memory_bytes", "process_virtual_memory_bytes", "process_cpu_seconds_total",
           "process_open_fds", "process_max_fds", "process_start_time_seconds", "process_threads"}
HISTOGRAMS = {"evalfleet_example_duration_seconds", "evalfleet_judge_request_duration_seconds",
              "evalfleet_batch_turnaround_seconds", "evalfleet_target_duration_seconds"}
SYNTHETIC = {"up"}
allowed = WORKER | AGGREGATOR | PROCESS | SYNTHETIC
allowed |= {h + s for h in HISTOGRAMS for s in ("_bucket", "_sum", "_count")}
allowed -= HISTOGRAMS        # a histogram is queried through its _bucket/_sum/_count series

FUNCTIONS = set("""abs absent absent_over_time avg_over_time ceil changes clamp clamp_max clamp_min
count_over_time day_of_month day_of_week day_of_year days_in_month delta deriv exp floor
histogram_avg histogram_count histogram_fraction histogram_quantile histogram_stddev
histogram_stdvar histogram_sum holt_winters double_exponential_smoothing hour idelta increase
irate label_join label_replace last_over_time ln log10 log2 mad_over_time max_over_time
min_over_time minute month predict_linear present_over_time quantile_over_time rate resets round
scalar sgn sort sort_desc sort_by_label sort_by_label_desc sqrt stddev_over_time stdvar_over_time
sum_over_time time timestamp vector year acos acosh asin asinh atan atanh cos cosh deg pi rad sin
sinh tan tanh sum min max avg group stddev stdvar count count_values bottomk topk quantile
limitk limit_ratio label_values""".split())
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
            "bool", "offset", "atan2", "inf", "nan", "Inf", "NaN"}

def metric_names(expr):
    e = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)
    e = re.sub(r"\{[^}]*\}", "", e)
    e = re.sub(r"\[[^\]]*\]", "", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w.$])[A-Za-z_:][A-Za-z0-9_:]*", e):
        tok = m.group(0)
        if tok in KEYWORDS:
            continue
        if e[m.end():].lstrip().startswith("("):
            if tok not in FUNCTIONS:
                raise ValueError(f"unknown function {tok} in {expr}")
            continue
        names.add(tok)
    return names

problems = []
used = {}
d = json.load(open("deploy/grafana/dashboards/evalfleet-fleet.json"))
for p in d["panels"]:
    for t in p.get("targets", []):
        for n in metric_names(t["expr"]):
            used.setdefault(n, set()).add(f"dashboard: {p['title']}")
for v in d["templating"]["list"]:
    q = v["query"] if isinstance(v["query"], str) else v["query"]["query"]
    m = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", q)
    if not m:
        problems.append(f"variable {v['name']}: unexpected query {q}")
    else:
        used.setdefault(m.group(1), set()).add(f"dashboard variable: {v['name']}")
for g in yaml.safe_load(open("deploy/prometheus/alerts.yml"))["groups"]:
    for r in g["rules"]:
        for n in metric_names(r["expr"]):
            used.setdefault(n, set()).add(f"alert: {r['alert']}")
for n, where in sorted(used.items()):
    if n not in allowed:
        problems.append(f"{n} is not an exported metric (used by {', '.join(sorted(where))})")
for p in problems:
    print("   ", p)
print(f"    {len(used)} metrics used: {', '.join(sorted(used))}")
sys.exit(1 if problems else 0)
PY

# ------------------------------------------------------------------------------------ kubernetes
log "kubernetes"
mapfile -t k8s_files < <(find deploy/k8s -name '*.yaml' ! -name kustomization.yaml | sort)
for v in "${K8S_VERSIONS[@]}"; do
  kv_out=$("$VENV/bin/kubernetes-validate" --strict -k "$v" "${k8s_files[@]}" 2>&1) && kv_rc=0 || kv_rc=$?
  # Kinds it has no schema for only produce a WARN: accept that for the CRDs checked below, and
  # nothing else (a typo in apiVersion or kind would otherwise pass unnoticed).
  unexpected=$(grep -v -E '^INFO .* passed ' <<<"$kv_out" \
    | grep -v -E "^WARN .* Couldn't find schema for kind (ScaledObject|TriggerAuthentication) with api version keda.sh/v1alpha1 " \
    | grep -v -E "^WARN .* Couldn't find schema for kind ServiceMonitor with api version monitoring.coreos.com/v1 " || true)
  passed=$(grep -c -E '^INFO .* passed ' <<<"$kv_out" || true)
  if [ "$kv_rc" -eq 0 ] && [ -z "$unexpected" ]; then
    ok "kubernetes-validate --strict -k $v ($passed core resources)"
  else
    printf '%s\n' "$unexpected" | sed 's/^/    /'
    fail "kubernetes-validate --strict -k $v"
  fi
done

pycheck "KEDA and Prometheus Operator resources match their CRD schemas (subset)" <<'PY'
# Hand-kept subsets of the upstream CRD schemas (KEDA 2.x keda.sh/v1alpha1 ScaledObject and
# TriggerAuthentication, prometheus-operator monitoring.coreos.com/v1 ServiceMonitor), strict
# on the levels evalfleet uses: an unknown or misspelt field fails.
import glob, sys, yaml, jsonschema

INT = {"type": "integer"}
STR = {"type": "string"}
DURATION = {"type": "string", "pattern": r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"}
LABEL_SELECTOR = {"type": "object", "additionalProperties": False, "properties": {
    "matchLabels": {"type": "object", "additionalProperties": STR},
    "matchExpressions": {"type": "array", "items": {"type": "object", "required": ["key", "operator"]}}}}
def meta(kind):
    return {"type": "object", "required": ["name", "namespace"], "properties": {
        "name": STR, "namespace": STR, "labels": {"type": "object", "additionalProperties": STR},
        "annotations": {"type": "object", "additionalProperties": STR}}}
HPA_RULES = {"type": "object", "additionalProperties": False, "properties": {
    "policies": {"type": "array", "items": {"type": "object", "additionalProperties": False,
                 "required": ["type", "value", "periodSeconds"], "properties": {
                     "type": {"enum": ["Pods", "Percent"]}, "value": INT, "periodSeconds": INT}}},
    "selectPolicy": {"enum": ["Max", "Min", "Disabled"]},
    "stabilizationWindowSeconds": INT, "tolerance": {}}}
SCALED_OBJECT = {"type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
  "additionalProperties": False, "properties": {
  "apiVersion": {"const": "keda.sh/v1alpha1"}, "kind": {"const": "ScaledObject"}, "metadata": meta("ScaledObject"),
  "spec": {"type": "object", "required": ["scaleTargetRef", "triggers"], "additionalProperties": False, "properties": {
    "scaleTargetRef": {"type": "object", "required": ["name"], "additionalProperties": False, "properties": {
        "apiVersion": STR, "kind": STR, "name": STR, "envSourceContainerName": STR}},
    "pollingInterval": INT, "cooldownPeriod": INT, "initialCooldownPeriod": INT,
    "idleReplicaCount": INT, "minReplicaCount": INT, "maxReplicaCount": INT,
    "fallback": {"type": "object", "required": ["failureThreshold", "replicas"], "additionalProperties": False,
                 "properties": {"failureThreshold": INT, "replicas": INT,
                                "behavior": {"enum": ["static", "currentReplicas", "currentReplicasIfHigher", "currentReplicasIfLower"]}}},
    "advanced": {"type": "object", "additionalProperties": False, "properties": {
        "restoreToOriginalReplicaCount": {"type": "boolean"},
        "horizontalPodAutoscalerConfig": {"type": "object", "additionalProperties": False, "properties": {
            "name": STR, "behavior": {"type": "object", "additionalProperties": False,
                                      "properties": {"scaleUp": HPA_RULES, "scaleDown": HPA_RULES}}}},
        "scalingModifiers": {"type": "object"}}},
    "triggers": {"type": "array", "minItems": 1, "items": {"type": "object", "required": ["type", "metadata"],
        "additionalProperties": False, "properties": {
            "type": STR, "name": STR, "useCachedMetrics": {"type": "boolean"},
            "metricType": {"enum": ["AverageValue", "Value", "Utilization"]},
            "metadata": {"type": "object", "additionalProperties": STR},
            "authenticationRef": {"type": "object", "required": ["name"], "additionalProperties": False,
                                  "properties": {"name": STR, "kind": {"enum": ["TriggerAuthentication", "ClusterTriggerAuthentication"]}}}}}}}}}}
SECRET_REF = {"type": "object", "required": ["parameter", "name", "key"], "additionalProperties": False,
              "properties": {"parameter": STR, "name": STR, "key": STR}}
TRIGGER_AUTH = {"type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
  "additionalProperties": False, "properties": {
  "apiVersion": {"const": "keda.sh/v1alpha1"}, "kind": {"const": "TriggerAuthentication"}, "metadata": meta("TriggerAuthentication"),
  "spec": {"type": "object", "additionalProperties": False, "minProperties": 1, "properties": {
      "secretTargetRef": {"type": "array", "items": SECRET_REF},
      "configMapTargetRef": {"type": "array", "items": SECRET_REF},
      "env": {"type": "array"}, "podIdentity": {"type": "object"}, "hashiCorpVault": {"type": "object"},
      "azureKeyVault": {"type": "object"}, "awsSecretManager": {"type": "object"},
      "gcpSecretManager": {"type": "object"}, "boundServiceAccountToken": {"type": "array"}}}}}
ENDPOINT = {"type": "object", "additionalProperties": False, "properties": {
    "port": STR, "targetPort": {"type": ["string", "integer"]}, "path": STR,
    "scheme": {"enum": ["http", "https", "HTTP", "HTTPS"]}, "interval": DURATION, "scrapeTimeout": DURATION,
    "params": {"type": "object"}, "honorLabels": {"type": "boolean"}, "honorTimestamps": {"type": "boolean"},
    "trackTimestampsStaleness": {"type": "boolean"}, "relabelings": {"type": "array"},
    "metricRelabelings": {"type": "array"}, "tlsConfig": {"type": "object"}, "basicAuth": {"type": "object"},
    "authorization": {"type": "object"}, "oauth2": {"type": "object"}, "bearerTokenSecret": {"type": "object"},
    "bearerTokenFile": STR, "followRedirects": {"type": "boolean"}, "enableHttp2": {"type": "boolean"},
    "filterRunning": {"type": "boolean"}, "proxyUrl": STR, "noProxy": STR,
    "proxyFromEnvironment": {"type": "boolean"}, "proxyConnectHeader": {"type": "object"}}}
SERVICE_MONITOR = {"type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
  "additionalProperties": False, "properties": {
  "apiVersion": {"const": "monitoring.coreos.com/v1"}, "kind": {"const": "ServiceMonitor"}, "metadata": meta("ServiceMonitor"),
  "spec": {"type": "object", "required": ["selector", "endpoints"], "additionalProperties": False, "properties": {
      "selector": LABEL_SELECTOR, "endpoints": {"type": "array", "minItems": 1, "items": ENDPOINT},
      "namespaceSelector": {"type": "object", "additionalProperties": False, "properties": {
          "any": {"type": "boolean"}, "matchNames": {"type": "array", "items": STR}}},
      "jobLabel": STR, "targetLabels": {"type": "array", "items": STR},
      "podTargetLabels": {"type": "array", "items": STR}, "sampleLimit": INT, "targetLimit": INT,
      "scrapeProtocols": {"type": "array", "items": STR}, "fallbackScrapeProtocol": STR,
      "labelLimit": INT, "labelNameLengthLimit": INT, "labelValueLengthLimit": INT,
      "keepDroppedTargets": INT, "attachMetadata": {"type": "object"}, "scrapeClass": STR,
      "bodySizeLimit": STR, "serviceDiscoveryRole": {"enum": ["Endpoints", "EndpointSlice"]},
      "selectorMechanism": {"enum": ["RelabelConfig", "RoleSelector"]},
      "nativeHistogramBucketLimit": INT, "nativeHistogramMinBucketFactor": {},
      "scrapeClassicHistograms": {"type": "boolean"}, "convertClassicHistogramsToNHCB": {"type": "boolean"}}}}}
SCHEMAS = {("keda.sh/v1alpha1", "ScaledObject"): SCALED_OBJECT,
           ("keda.sh/v1alpha1", "TriggerAuthentication"): TRIGGER_AUTH,
           ("monitoring.coreos.com/v1", "ServiceMonitor"): SERVICE_MONITOR}

problems, seen = [], {}
docs = {}
for f in sorted(glob.glob("deploy/k8s/*.yaml")):
    for doc in yaml.safe_load_all(open(f)):
        if doc:
            docs.setdefault(doc["kind"], []).append((f, doc))
            key = (doc.get("apiVersion"), doc.get("kind"))
            if key in SCHEMAS:
                seen[key] = seen.get(key, 0) + 1
                for e in jsonschema.Draft7Validator(SCHEMAS[key]).iter_errors(doc):
                    problems.append(f"{f} {doc['kind']}/{doc['metadata'].get('name')}: "
                                    f"{'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}")
for key in SCHEMAS:
    if not seen.get(key):
        problems.append(f"no {key[1]} found")

# Cross-references between the resources.
def one(kind, name):
    return next((d for _, d in docs.get(kind, []) if d["metadata"]["name"] == name), None)
so = one("ScaledObject", "evalfleet-worker")
if so:
    if not one("Deployment", so["spec"]["scaleTargetRef"]["name"]):
        problems.append("ScaledObject targets a Deployment that does not exist")
    t = so["spec"]["triggers"][0]
    if t["type"] != "rabbitmq" or t["metadata"].get("queueName") != "evalfleet.examples":
        problems.append("ScaledObject must scale on RabbitMQ queue evalfleet.examples")
    if not one("TriggerAuthentication", t.get("authenticationRef", {}).get("name")):
        problems.append("ScaledObject's TriggerAuthentication does not exist")
    if "maxReplicaCount" not in so["spec"]:
        problems.append("maxReplicaCount missing")
secret = one("Secret", "evalfleet-secrets")
secret_keys = set(secret["stringData"]) if secret else set()
for kind in ("TriggerAuthentication",):
    for _, d in docs.get(kind, []):
        for ref in d["spec"].get("secretTargetRef", []):
            if ref["name"] != "evalfleet-secrets" or ref["key"] not in secret_keys:
                problems.append(f"{kind} refers to secret key {ref['name']}/{ref['key']} the template lacks")
for _, dep in docs.get("Deployment", []):
    spec = dep["spec"]["template"]["spec"]
    for c in spec["containers"]:
        for env in c.get("env", []):
            ref = env.get("valueFrom", {}).get("secretKeyRef")
            if ref and (ref["name"] != "evalfleet-secrets" or ref["key"] not in secret_keys):
                problems.append(f"{dep['metadata']['name']}: env {env['name']} refers to a key the secret template lacks")
        sc = c.get("securityContext", {})
        if not (sc.get("readOnlyRootFilesystem") and sc.get("runAsNonRoot") and sc.get("allowPrivilegeEscalation") is False):
            problems.append(f"{dep['metadata']['name']}: container not non-root with a read-only root filesystem")
        if not (c.get("resources", {}).get("requests") and c.get("resources", {}).get("limits")):
            problems.append(f"{dep['metadata']['name']}: resources requests/limits missing")
        probes = {p: c.get(p, {}).get("httpGet", {}).get("path") for p in ("livenessProbe", "readinessProbe")}
        if probes != {"livenessProbe": "/healthz", "readinessProbe": "/readyz"}:
            problems.append(f"{dep['metadata']['name']}: probes {probes}")
    if spec.get("securityContext", {}).get("runAsUser") != 10001:
        problems.append(f"{dep['metadata']['name']}: pod does not run as uid 10001")
worker = one("Deployment", "evalfleet-worker")
cm = one("ConfigMap", "evalfleet-config")
if worker and cm:
    deadline = yaml.safe_load(cm["data"]["evalfleet.yaml"])["fleet"]["shutdown_deadline_s"]
    grace = worker["spec"]["template"]["spec"].get("terminationGracePeriodSeconds", 30)
    if grace <= deadline:
        problems.append(f"worker terminationGracePeriodSeconds {grace} <= fleet.shutdown_deadline_s {deadline}")
    ports = {p["name"]: p["containerPort"] for c in worker["spec"]["template"]["spec"]["containers"] for p in c.get("ports", [])}
    if ports.get("metrics") != 9464:
        problems.append("worker metrics port is not 9464")
for name, comp, port in (("evalfleet-worker", "worker", "metrics"), ("evalfleet-aggregator", "aggregator", "http")):
    svc, sm = one("Service", name), one("ServiceMonitor", name)
    if not svc or not sm:
        problems.append(f"Service and ServiceMonitor {name} (the Prometheus job name) missing")
        continue
    if not all(svc["metadata"]["labels"].get(k) == v for k, v in sm["spec"]["selector"]["matchLabels"].items()):
        problems.append(f"ServiceMonitor {name} does not select Service {name}")
    if port not in [p["name"] for p in svc["spec"]["ports"]] or sm["spec"]["endpoints"][0]["port"] != port:
        problems.append(f"ServiceMonitor {name} scrapes a port the Service does not name")
if one("Service", "evalfleet-worker") and one("Service", "evalfleet-worker")["spec"].get("clusterIP") != "None":
    problems.append("the worker metrics Service must be headless")
pdb = one("PodDisruptionBudget", "evalfleet-worker")
if not pdb or pdb["spec"]["selector"]["matchLabels"] != worker["spec"]["selector"]["matchLabels"]:
    problems.append("the PodDisruptionBudget does not select the workers")
for p in problems:
    print("   ", p)
sys.exit(1 if problems else 0)
PY

pycheck "kustomization lists every manifest but the secret template" <<'PY'
import os, sys, yaml
k = yaml.safe_load(open("deploy/k8s/kustomization.yaml"))
listed = set(k["resources"])
files = {f for f in os.listdir("deploy/k8s") if f.endswith(".yaml") and f != "kustomization.yaml"}
problems = [f"{f} is listed but does not exist" for f in sorted(listed - files)]
problems += [f"{f} is not listed" for f in sorted(files - listed - {"secret-template.yaml"})]
if "secret-template.yaml" in listed:
    problems.append("secret-template.yaml must not be applied (it would overwrite the real credentials)")
for p in problems:
    print("   ", p)
sys.exit(1 if problems else 0)
PY
if command -v kubectl >/dev/null 2>&1; then
  check "kubectl kustomize deploy/k8s" bash -c 'kubectl kustomize deploy/k8s >/dev/null'
else
  echo "  skipped: kubectl kustomize (kubectl not installed; the listing was checked above)"
fi

pycheck "ConfigMap evalfleet.yaml has only keys config/evalfleet.yaml knows" <<'PY'
import sys, yaml
WILD = {"providers", "prices", "judge_models", "judge_mapping"}   # tables keyed by user-chosen names
def paths(v, prefix=()):
    out = set()
    if isinstance(v, dict):
        for k, x in v.items():
            p = prefix + ("*" if prefix and prefix[-1] in WILD else k,)
            out |= {p} | paths(x, p)
    return out
shipped = yaml.safe_load(open("config/evalfleet.yaml"))
cm = [d for d in yaml.safe_load_all(open("deploy/k8s/configmap.yaml")) if d][0]
ours = yaml.safe_load(cm["data"]["evalfleet.yaml"])
unknown = sorted(paths(ours) - paths(shipped))
for u in unknown:
    print("    unknown key:", ".".join(u))
sys.exit(1 if unknown else 0)
PY
# The most recently built binary, if any (a stale one may predate config keys).
evalfleet_bin=
for b in target/release/evalfleet target/debug/evalfleet; do
  if [ -x "$b" ] && { [ -z "$evalfleet_bin" ] || [ "$b" -nt "$evalfleet_bin" ]; }; then evalfleet_bin=$b; fi
done
if [ -n "$evalfleet_bin" ]; then
  cm_config=$(mktemp --suffix=.yaml)
  trap 'rm -f "$compose_json" "$promql_rules" "$cm_config"' EXIT
  "$PY" -c 'import sys, yaml; print([d for d in yaml.safe_load_all(open(sys.argv[1])) if d][0]["data"]["evalfleet.yaml"], end="")' \
    deploy/k8s/configmap.yaml > "$cm_config"
  check "ConfigMap evalfleet.yaml loads in $evalfleet_bin" \
    env EVALFLEET_CONFIG="$cm_config" "$evalfleet_bin" validate examples/support-judge.jsonl --suite support-judge
else
  echo "  skipped: loading the ConfigMap's evalfleet.yaml with evalfleet (no target/*/evalfleet built)"
fi

# ------------------------------------------------------------------------------------ this script
log "shell"
check "shellcheck scripts/validate-deploy.sh" shellcheck scripts/validate-deploy.sh

# ------------------------------------------------------------------------------------ verdict
echo
if [ ${#failures[@]} -gt 0 ]; then
  echo "validate-deploy: ${#failures[@]} check(s) failed:"
  printf '  - %s\n' "${failures[@]}"
  exit 1
fi
echo "validate-deploy: all checks passed"
