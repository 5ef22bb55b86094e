#!/usr/bin/env python3
"""Checks that the current official OpenAI and Anthropic Python SDKs work against
`evalfleet fake-provider`: a judge call with each SDK, Bearer auth for Anthropic, 401 on a
wrong key, 429s the SDKs retry after the server's `retry-after`, and both batch APIs
(`client.files.create`, `client.batches.create/retrieve/list/cancel`, `client.files.content`;
`client.messages.batches.create/retrieve/list/cancel/results`).

Run by scripts/sdk-compat.sh, which starts the fake and sets:
  SDK_COMPAT_BASE_URL   http://127.0.0.1:PORT (OpenAI base is this + /v1; admin and stats too)
  SDK_COMPAT_API_KEY    the key the fake requires

Plain Python, no test framework: one line per check, then `sdk-compat: N passed, M failed`;
exit status 1 when any check failed.
"""

import json
import os
import sys
import time
import traceback
import urllib.request

import anthropic
import anthropic._constants
import openai
import openai._constants

BASE = os.environ["SDK_COMPAT_BASE_URL"].rstrip("/")
KEY = os.environ["SDK_COMPAT_API_KEY"]
OPENAI_BASE = BASE + "/v1"
ANTHROPIC_BASE = BASE  # the Anthropic SDK appends /v1/messages itself

OPENAI_MODEL = "gpt-4o-mini"
ANTHROPIC_MODEL = "claude-sonnet-4-20250514"
SYSTEM = (
    "You are an impartial judge. Grade the answer to the question for correctness and "
    'helpfulness. Reply with a JSON object {"score": <score>, "reasoning": "<one sentence>"} '
    "where the score is an integer from 1 to 5."
)
USER = "Question: What is the capital of France?\nAnswer: Paris."

# Fault phase (check 5).
FAULT_429 = 0.5
RETRY_AFTER_MS = 300
FAULT_SEED = 7
CALLS = 6  # per SDK, at least
MAX_CALLS = 40  # per SDK, at most, while no 429 has been seen
MAX_RETRIES = 5

results = []  # (name, ok)


class CheckFailed(Exception):
    pass


def expect(cond, message):
    if not cond:
        raise CheckFailed(message)


def check(name, fn):
    """Runs one check, prints `PASS name: detail` or `FAIL name: reason`."""
    try:
        detail = fn()
    except CheckFailed as e:
        print(f"FAIL {name}: {e}", flush=True)
        results.append((name, False))
    except Exception as e:  # an SDK error is a failed check, with what the SDK said
        print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
        traceback.print_exc(limit=3, file=sys.stdout)
        results.append((name, False))
    else:
        print(f"PASS {name}" + (f": {detail}" if detail else ""), flush=True)
        results.append((name, True))


# ---------------------------------------------------------------- plain HTTP to the fake's admin


def http_json(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method=method)
    if data is not None:
        req.add_header("content-type", "application/json")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def status_count(stats, provider, status):
    return int(stats.get("by_provider_status", {}).get(provider, {}).get(str(status), 0))


def first_json_object(text):
    """The first `{...}` in `text` that parses as a JSON object (prose or a fence around it)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            pass
        else:
            if isinstance(value, dict):
                return value
        start = text.find("{", start + 1)
    raise CheckFailed(f"no JSON object in {text!r}")


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def expect_score(verdict, text):
    score = verdict.get("score")
    expect(is_int(score), f"score is not an integer: {verdict!r}")
    expect(1 <= score <= 5, f"score {score} is not in 1..5: {text!r}")
    return score


# ---------------------------------------------------------------- wire log (httpx event hooks)


class WireLog:
    """Every attempt an SDK client sends and every response it gets, with monotonic times, so
    the gap between a 429 and the retry after it can be measured."""

    def __init__(self):
        self.events = []  # ("request", t, None) | ("response", t, (status, headers))

    def on_request(self, request):
        self.events.append(("request", time.monotonic(), None))

    def on_response(self, response):
        self.events.append(("response", time.monotonic(), (response.status_code, response.headers)))

    def hooks(self):
        return {"request": [self.on_request], "response": [self.on_response]}

    def mark(self):
        return len(self.events)

    def retries_since(self, mark):
        """(status, headers, gap_s) for each non-200 response followed by another attempt."""
        out = []
        events = self.events[mark:]
        for i, (kind, t, info) in enumerate(events):
            if kind != "response" or info[0] == 200:
                continue
            nxt = next((e for e in events[i + 1 :] if e[0] == "request"), None)
            if nxt is not None:
                out.append((info[0], info[1], nxt[1] - t))
        return out

    def statuses_since(self, mark):
        return [info[0] for kind, _, info in self.events[mark:] if kind == "response"]


def advertised_delay(sdk, headers):
    """The delay the response told the SDK to wait, the way the SDK reads it (`retry-after-ms`
    first, then `retry-after` in seconds), in seconds."""
    if headers.get("retry-after-ms") is not None:
        return float(headers["retry-after-ms"]) / 1000
    if headers.get("retry-after") is not None:
        return float(headers["retry-after"])
    return None


# ---------------------------------------------------------------- clients


def openai_client(key=KEY, **kw):
    return openai.OpenAI(api_key=key, base_url=OPENAI_BASE, **kw)


def anthropic_client(key=KEY, **kw):
    return anthropic.Anthropic(api_key=key, base_url=ANTHROPIC_BASE, **kw)


def openai_call(client, user=USER):
    return client.chat.completions.create(
        model=OPENAI_MODEL,
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
        response_format={"type": "json_object"},
        max_tokens=100,
    )


def anthropic_call(client, user=USER, raw=False):
    messages = client.messages.with_raw_response if raw else client.messages
    return messages.create(
        model=ANTHROPIC_MODEL,
        max_tokens=100,
        system=SYSTEM,
        messages=[{"role": "user", "content": user}],
    )


def expect_anthropic_message(msg):
    expect(msg.id, "no id")
    expect(msg.content, "empty content")
    block = msg.content[0]
    expect(block.type == "text", f"content[0].type is {block.type!r}")
    verdict = first_json_object(block.text)
    score = expect_score(verdict, block.text)
    u = msg.usage
    expect(is_int(u.input_tokens) and u.input_tokens > 0, f"usage.input_tokens = {u.input_tokens!r}")
    expect(is_int(u.output_tokens) and u.output_tokens > 0, f"usage.output_tokens = {u.output_tokens!r}")
    expect(msg.stop_reason, f"stop_reason = {msg.stop_reason!r}")
    return score


# ---------------------------------------------------------------- checks


def check_openai_judge():
    resp = openai_call(openai_client(max_retries=0))
    expect(resp.id, "no id")
    expect(resp.model, "no model")
    expect(resp.choices, "no choices")
    content = resp.choices[0].message.content
    try:
        verdict = json.loads(content)
    except (TypeError, ValueError) as e:
        raise CheckFailed(f"content is not bare JSON ({e}): {content!r}") from None
    expect(isinstance(verdict, dict), f"content is not a JSON object: {content!r}")
    score = expect_score(verdict, content)
    expect(isinstance(verdict.get("reasoning"), str), f"reasoning is not a string: {content!r}")
    u = resp.usage
    expect(u is not None, "no usage")
    for field in ("prompt_tokens", "completion_tokens", "total_tokens"):
        value = getattr(u, field)
        expect(is_int(value) and value > 0, f"usage.{field} = {value!r}")
    expect(
        u.total_tokens == u.prompt_tokens + u.completion_tokens,
        f"total_tokens {u.total_tokens} != {u.prompt_tokens} + {u.completion_tokens}",
    )
    return (
        f"score={score} usage={u.prompt_tokens}+{u.completion_tokens}={u.total_tokens} "
        f"model={resp.model} id={resp.id}"
    )


def check_anthropic_judge():
    msg = anthropic_call(anthropic_client(max_retries=0))
    score = expect_anthropic_message(msg)
    u = msg.usage
    return (
        f"score={score} usage in={u.input_tokens} out={u.output_tokens} "
        f"stop_reason={msg.stop_reason} id={msg.id}"
    )


def check_anthropic_bearer():
    sent = {}

    def capture(request):
        sent["authorization"] = request.headers.get("authorization", "")
        sent["x-api-key"] = request.headers.get("x-api-key")

    http = anthropic.DefaultHttpxClient(event_hooks={"request": [capture]})
    client = anthropic.Anthropic(
        auth_token=KEY, api_key=None, base_url=ANTHROPIC_BASE, max_retries=0, http_client=http
    )
    msg = anthropic_call(client)
    score = expect_anthropic_message(msg)
    expect(
        sent.get("authorization", "").lower().startswith("bearer "),
        f"the SDK sent no Bearer token (authorization={sent.get('authorization')!r})",
    )
    expect(sent.get("x-api-key") is None, "the SDK also sent x-api-key, so Bearer was not tested")
    return f"Authorization: Bearer accepted, score={score}"


def check_wrong_key():
    wrong = "sk-wrong-" + KEY[::-1]
    try:
        openai_call(openai_client(key=wrong, max_retries=0))
    except openai.AuthenticationError as e:
        expect(e.status_code == 401, f"openai status {e.status_code}")
    else:
        raise CheckFailed("OpenAI SDK: a wrong key was accepted")
    try:
        anthropic_call(anthropic_client(key=wrong, max_retries=0))
    except anthropic.AuthenticationError as e:
        expect(e.status_code == 401, f"anthropic (x-api-key) status {e.status_code}")
    else:
        raise CheckFailed("Anthropic SDK: a wrong x-api-key was accepted")
    try:
        client = anthropic.Anthropic(auth_token=wrong, api_key=None, base_url=ANTHROPIC_BASE, max_retries=0)
        anthropic_call(client)
    except anthropic.AuthenticationError as e:
        expect(e.status_code == 401, f"anthropic (Bearer) status {e.status_code}")
    else:
        raise CheckFailed("Anthropic SDK: a wrong Bearer token was accepted")
    return "openai.AuthenticationError 401; anthropic.AuthenticationError 401 (x-api-key and Bearer)"


def retry_phase(provider, sdk, make_client, call, retries_taken):
    """Calls until at least CALLS calls and at least one 429 (at most MAX_CALLS), all of which
    must succeed; then checks the fake counted the 429s and that the SDK waited as told."""
    log = WireLog()
    client = make_client(max_retries=MAX_RETRIES, http_client=sdk.DefaultHttpxClient(event_hooks=log.hooks()))
    before = http_json("GET", "/stats")
    calls, seen_429, waited_calls, sdk_retries = 0, 0, [], 0
    while calls < CALLS or (seen_429 == 0 and calls < MAX_CALLS):
        mark = log.mark()
        started = time.monotonic()
        raw = call(client, user=f"{USER}\n(call {calls})")
        elapsed = time.monotonic() - started
        calls += 1
        sdk_retries += retries_taken(raw)
        statuses = log.statuses_since(mark)
        expect(statuses and statuses[-1] == 200, f"call {calls} ended with {statuses}")
        n429 = statuses.count(429)
        seen_429 += n429
        if n429:
            delays = [advertised_delay(sdk, h) for s, h, _ in log.retries_since(mark) if s == 429]
            waited_calls.append((elapsed, sum(d for d in delays if d)))
    after = http_json("GET", "/stats")

    retries = [r for r in log.retries_since(0) if r[0] == 429]
    other = sorted({s for s, _, _ in log.retries_since(0) if s != 429})
    expect(not other, f"retried statuses other than 429: {other}")
    expect(seen_429 > 0, f"no 429 in {calls} calls at fault_429={FAULT_429}")
    expect(sdk_retries == seen_429, f"the SDK reports {sdk_retries} retries, the wire shows {seen_429} 429s")
    d429 = status_count(after, provider, 429) - status_count(before, provider, 429)
    d200 = status_count(after, provider, 200) - status_count(before, provider, 200)
    expect(d429 == seen_429, f"/stats counted {d429} new {provider} 429s, the SDK got {seen_429}")
    expect(d200 == calls, f"/stats counted {d200} new {provider} 200s for {calls} calls")

    # Every 429 told the SDK how long to wait; the gap from that response to the next attempt
    # must be at least that long (the SDK sleeps for it before it builds the retry).
    for status, headers, gap in retries:
        delay = advertised_delay(sdk, headers)
        expect(delay is not None, f"a 429 without retry-after: {dict(headers)}")
        expect(gap >= delay, f"retried {gap:.3f}s after a 429 that said wait {delay:.3f}s")
    # At least one whole call took at least the advertised delay.
    expect(
        any(elapsed >= delay for elapsed, delay in waited_calls),
        f"no call with a 429 took as long as its retry-after: {waited_calls}",
    )
    # The SDK used the server's delay, not its own backoff: its first backoff is
    # INITIAL_RETRY_DELAY * [0.75, 1] (0.375-0.5 s); the server's differs from that range.
    own_min = sdk._constants.INITIAL_RETRY_DELAY * 0.75
    own_max = sdk._constants.INITIAL_RETRY_DELAY
    told = advertised_delay(sdk, retries[0][1])
    gaps = [g for _, _, g in retries]
    if told < own_min:
        expect(
            any(told <= g < own_min for g in gaps),
            f"no retry came after {told:.3f}s (< the SDK's own minimum backoff {own_min:.3f}s): "
            f"gaps {[round(g, 3) for g in gaps]}",
        )
    else:
        expect(told > own_max, f"retry-after {told}s is inside the SDK's own first backoff range")
    headers = retries[0][1]
    shown = {h: headers.get(h) for h in ("retry-after", "retry-after-ms", "x-should-retry") if h in headers}
    return (
        f"{calls} calls ok, {seen_429} x 429 (stats agree), headers {shown}, "
        f"retry gaps {min(gaps):.3f}-{max(gaps):.3f}s, slowest call {max(e for e, _ in waited_calls):.3f}s"
    )


def check_retry_openai():
    return retry_phase(
        "openai",
        openai,
        openai_client,
        lambda client, user: client.chat.completions.with_raw_response.create(
            model=OPENAI_MODEL,
            messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
            response_format={"type": "json_object"},
            max_tokens=100,
        ),
        lambda raw: raw.retries_taken,
    )


def check_retry_anthropic():
    def call(client, user):
        raw = anthropic_call(client, user=user, raw=True)
        expect_anthropic_message(raw.parse())
        return raw

    return retry_phase("anthropic", anthropic, anthropic_client, call, lambda raw: raw.retries_taken)


# ---------------------------------------------------------------- batch APIs (check 6)

BATCH_PROCESSING_MS = 400


def wait_for(retrieve, done, what):
    deadline = time.monotonic() + 20
    while True:
        batch = retrieve()
        if done(batch):
            return batch
        expect(time.monotonic() < deadline, f"{what} did not end: {batch!r}")
        time.sleep(0.1)


def check_openai_batch():
    import io

    client = openai_client(max_retries=0)
    lines = []
    for i in range(3):
        body = {
            "model": OPENAI_MODEL,
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": f"{USER} (case {i})"},
            ],
            "response_format": {"type": "json_object"},
            "max_tokens": 100,
        }
        line = {"custom_id": f"case-{i}", "method": "POST", "url": "/v1/chat/completions", "body": body}
        lines.append(json.dumps(line))
    data = ("\n".join(lines) + "\n").encode()
    upload = client.files.create(file=("cases.jsonl", io.BytesIO(data)), purpose="batch")
    expect(upload.id.startswith("file-"), f"file id {upload.id!r}")
    expect(upload.bytes == len(data), f"file bytes {upload.bytes} != {len(data)}")
    batch = client.batches.create(
        input_file_id=upload.id,
        endpoint="/v1/chat/completions",
        completion_window="24h",
        metadata={"run": "sdk-compat"},
    )
    expect(batch.status in ("validating", "in_progress"), f"new batch status {batch.status!r}")
    final = wait_for(
        lambda: client.batches.retrieve(batch.id),
        lambda b: b.status in ("completed", "failed", "expired", "cancelled"),
        "openai batch",
    )
    expect(final.status == "completed", f"status {final.status!r}, errors {final.errors!r}")
    counts = final.request_counts
    expect((counts.total, counts.completed, counts.failed) == (3, 3, 0), f"request_counts {counts!r}")
    expect(final.output_file_id, "no output_file_id")
    content = client.files.content(final.output_file_id).text
    scores = {}
    for raw in content.splitlines():
        out = json.loads(raw)
        expect(out["response"]["status_code"] == 200, f"line {raw!r}")
        message = out["response"]["body"]["choices"][0]["message"]["content"]
        scores[out["custom_id"]] = expect_score(json.loads(message), message)
    expect(sorted(scores) == ["case-0", "case-1", "case-2"], f"custom_ids {sorted(scores)}")
    listed = client.batches.list(limit=10)
    expect(any(b.id == batch.id for b in listed.data), "batch not in list")
    # Cancel a second, slower batch.
    http_json("POST", "/admin/config", {"batch_processing_ms": 60_000})
    try:
        one = lines[0].replace('"case-0"', '"slow-0"')
        upload = client.files.create(file=("one.jsonl", io.BytesIO(one.encode())), purpose="batch")
        slow = client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h")
        cancelling = client.batches.cancel(slow.id)
        expect(cancelling.status == "cancelling", f"cancel gave {cancelling.status!r}")
    finally:
        http_json("POST", "/admin/config", {"batch_processing_ms": BATCH_PROCESSING_MS})
    return f"batch {batch.id} completed, scores {scores}"


def check_anthropic_batch():
    client = anthropic_client(max_retries=0)
    requests = [
        {
            "custom_id": f"case-{i}",
            "params": {
                "model": ANTHROPIC_MODEL,
                "max_tokens": 100,
                "system": SYSTEM,
                "messages": [{"role": "user", "content": f"{USER} (case {i})"}],
            },
        }
        for i in range(3)
    ]
    batch = client.messages.batches.create(requests=requests)
    expect(batch.id.startswith("msgbatch_"), f"batch id {batch.id!r}")
    expect(batch.processing_status == "in_progress", f"status {batch.processing_status!r}")
    final = wait_for(
        lambda: client.messages.batches.retrieve(batch.id),
        lambda b: b.processing_status == "ended",
        "anthropic batch",
    )
    expect(final.request_counts.succeeded == 3, f"request_counts {final.request_counts!r}")
    expect(final.results_url, "no results_url")
    scores = {}
    for entry in client.messages.batches.results(batch.id):
        expect(entry.result.type == "succeeded", f"result {entry!r}")
        scores[entry.custom_id] = expect_anthropic_message(entry.result.message)
    expect(sorted(scores) == ["case-0", "case-1", "case-2"], f"custom_ids {sorted(scores)}")
    listed = client.messages.batches.list(limit=10)
    expect(any(b.id == batch.id for b in listed.data), "batch not in list")
    http_json("POST", "/admin/config", {"batch_processing_ms": 60_000})
    try:
        slow = client.messages.batches.create(requests=[{**requests[0], "custom_id": "slow-0"}])
        canceling = client.messages.batches.cancel(slow.id)
        expect(canceling.processing_status == "canceling", f"cancel gave {canceling.processing_status!r}")
    finally:
        http_json("POST", "/admin/config", {"batch_processing_ms": BATCH_PROCESSING_MS})
    return f"batch {batch.id} ended, scores {scores}"


def main():
    print(f"openai {openai.__version__}, anthropic {anthropic.__version__}, fake at {BASE}", flush=True)
    check("1 openai judge (json_object)", check_openai_judge)
    check("2 anthropic judge", check_anthropic_judge)
    check("3 anthropic Bearer auth_token", check_anthropic_bearer)
    check("4 wrong key -> AuthenticationError 401", check_wrong_key)
    config = {"fault_429": FAULT_429, "fault_retry_after_ms": RETRY_AFTER_MS, "seed": FAULT_SEED}
    try:
        http_json("POST", "/admin/config", config)
        check("5a openai retries 429 after retry-after", check_retry_openai)
        check("5b anthropic retries 429 after retry-after", check_retry_anthropic)
    finally:
        http_json("POST", "/admin/config", {"fault_429": 0.0})

    def faults_reset():
        cfg = http_json("GET", "/admin/config")
        expect(cfg.get("fault_429") == 0, f"fault_429 is {cfg.get('fault_429')}")
        return "fault_429 = 0"

    check("5c faults reset", faults_reset)
    http_json("POST", "/admin/config", {"batch_processing_ms": BATCH_PROCESSING_MS})
    check("6a openai Files + Batches", check_openai_batch)
    check("6b anthropic Message Batches", check_anthropic_batch)

    def batches_paid_once():
        stats = http_json("GET", "/stats")["batches"]
        for provider in ("openai", "anthropic"):
            repeated = stats[provider]["repeated_custom_ids"]
            expect(repeated == [], f"{provider} custom_ids batched twice: {repeated}")
        return f"openai {stats['openai']['requests']}, anthropic {stats['anthropic']['requests']} batch requests"

    check("6c batch ledger", batches_paid_once)
    passed = sum(ok for _, ok in results)
    failed = len(results) - passed
    print(f"sdk-compat: {passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
