"""Drives Warden's OpenAI-compatible API with the official `openai` Python client (PyPI, pinned in
test/frontend/openai/client.test.ts) against the toy generator (test/fixtures/python/toy_llm).
Usage: python openai_client.py <base_url> <api_key>. Prints one JSON object with what it saw;
the vitest wrapper checks it. Any exception the client raises unexpectedly fails the run."""
import json
import sys

import openai

base_url, api_key = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base_url + "/v1", api_key=api_key, max_retries=0)
out = {}

out["models"] = sorted(m.id for m in client.models.list())
out["model"] = client.models.retrieve("toy_llm").model_dump()

c = client.completions.create(model="toy_llm", prompt="one two", max_tokens=3)
out["completion"] = {"text": c.choices[0].text, "finish": c.choices[0].finish_reason, "usage": c.usage.model_dump(exclude_none=True)}

chat = client.chat.completions.create(model="toy_llm", messages=[{"role": "user", "content": "hello"}], max_completion_tokens=4, n=2)
out["chat"] = {
    "texts": [ch.message.content for ch in chat.choices],
    "roles": [ch.message.role for ch in chat.choices],
    "finish": [ch.finish_reason for ch in chat.choices],
    "usage": chat.usage.model_dump(exclude_none=True),
}

stream = client.chat.completions.create(
    model="toy_llm", messages=[{"role": "user", "content": "hello"}], max_tokens=5, stream=True, stream_options={"include_usage": True}
)
deltas, finish, usage = [], None, None
for chunk in stream:
    if chunk.usage is not None:
        usage = chunk.usage.model_dump(exclude_none=True)
    for ch in chunk.choices:
        if ch.delta.content:
            deltas.append(ch.delta.content)
        if ch.finish_reason:
            finish = ch.finish_reason
out["chat_stream"] = {"deltas": deltas, "finish": finish, "usage": usage}

cstream = client.completions.create(model="toy_llm", prompt="one two", max_tokens=3, stream=True, stop=["delta"])
out["completion_stream"] = "".join(ch.choices[0].text for ch in cstream if ch.choices)

lc = client.completions.create(model="toy_llm", prompt="one two", max_tokens=3, logprobs=2)
lcs = client.completions.create(model="toy_llm", prompt="one two", max_tokens=3, logprobs=2, stream=True)
streamed_tokens = [t for ch in lcs if ch.choices and ch.choices[0].logprobs for t in ch.choices[0].logprobs.tokens]
out["completion_logprobs"] = {"whole": lc.choices[0].logprobs.model_dump(), "streamed_tokens": streamed_tokens}

hello = [{"role": "user", "content": "hello"}]
lchat = client.chat.completions.create(model="toy_llm", messages=hello, max_completion_tokens=3, logprobs=True, top_logprobs=2)
lchats = client.chat.completions.create(model="toy_llm", messages=hello, max_completion_tokens=3, logprobs=True, top_logprobs=2, stream=True)
streamed = [t.model_dump() for ch in lchats if ch.choices and ch.choices[0].logprobs for t in ch.choices[0].logprobs.content]
out["chat_logprobs"] = {"whole": [t.model_dump() for t in lchat.choices[0].logprobs.content], "streamed": streamed}

errors = {}
try:
    client.chat.completions.create(model="toy_llm", messages=hello, top_logprobs=2)
except openai.BadRequestError as e:
    errors["top_logprobs"] = {"status": e.status_code, "param": e.param, "message": e.body["message"]}
try:
    client.completions.create(model="no_such_model", prompt="x")
except openai.NotFoundError as e:
    errors["not_found"] = {"status": e.status_code, "code": e.code, "param": e.param, "type": e.type}
try:
    client.completions.create(model="toy_llm", prompt="x", temperature=5)
except openai.BadRequestError as e:
    errors["bad_request"] = {"status": e.status_code, "param": e.param, "type": e.type}
try:
    openai.OpenAI(base_url=base_url + "/v1", api_key="wrong-key-0123456789abcdefghijkl", max_retries=0).models.list()
except openai.AuthenticationError as e:
    errors["auth"] = {"status": e.status_code, "type": e.type}
out["errors"] = errors
print(json.dumps(out))
