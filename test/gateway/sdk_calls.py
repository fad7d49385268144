# The openai-python SDK's chat calls against the gateway (run by providers-sdk.test.ts with the
# venv of scripts/setup.d/66-openai-python.sh): a completion, a stream, a tool call (answer and
# stream) and the tool result sent back. Prints one JSON object of what the SDK returned; any SDK
# error ends the script with a non-zero status and its message.
import json
import sys

from openai import OpenAI

base_url, key = sys.argv[1], sys.argv[2]
client = OpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=30)
tools = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]
out = {}

completion = client.chat.completions.create(
    model="m", messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello python"}]
)
out["completion"] = completion.choices[0].message.content
out["usage"] = completion.usage.model_dump() if completion.usage else None

text = ""
usage = None
for chunk in client.chat.completions.create(
    model="m",
    messages=[{"role": "user", "content": "stream python"}],
    stream=True,
    stream_options={"include_usage": True},
):
    if chunk.choices:
        text += chunk.choices[0].delta.content or ""
    if chunk.usage:
        usage = chunk.usage.model_dump()
out["stream"] = text
out["streamUsage"] = usage

call = client.chat.completions.create(
    model="m", messages=[{"role": "user", "content": "weather in Paris?"}], tools=tools, tool_choice="auto"
)
tool_call = call.choices[0].message.tool_calls[0]
out["toolCall"] = {
    "finish": call.choices[0].finish_reason,
    "name": tool_call.function.name,
    "arguments": json.loads(tool_call.function.arguments),
}

# The stream helper assembles the tool call from its deltas.
with client.chat.completions.stream(
    model="m", messages=[{"role": "user", "content": "weather in Paris?"}], tools=tools
) as stream:
    final = stream.get_final_completion()
streamed = final.choices[0].message.tool_calls[0]
out["streamToolCall"] = {"name": streamed.function.name, "arguments": json.loads(streamed.function.arguments)}

answer = client.chat.completions.create(
    model="m",
    messages=[
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [tool_call.model_dump()]},
        {"role": "tool", "tool_call_id": tool_call.id, "content": "sunny"},
    ],
    tools=tools,
)
out["afterTool"] = answer.choices[0].message.content
print(json.dumps(out))
