"""A scripted MCP server for the `mcp_client` fuzz target: python3 fake_server.py SCRIPT.

SCRIPT is a JSON list of replies, one used per request the client sends, in order:
{"result": ANY} or {"error": {"code", "message"}} answer the request (with its id, or with
"id": ANY when the reply gives one); {"raw": TEXT} writes TEXT as a line instead;
{"notify": {"method", "params"}} writes a notification first and takes the next reply.
When the replies run out the server stops reading and exits.
"""
import json
import sys

replies = json.load(open(sys.argv[1], encoding="utf-8"))
out = sys.stdout


def write(text):
    out.write(text + "\n")
    out.flush()


for line in sys.stdin:
    try:
        request = json.loads(line)
    except ValueError:
        continue
    if "id" not in request:
        continue  # a notification from the client
    while replies:
        reply = replies.pop(0)
        if "notify" in reply:
            write(json.dumps({"jsonrpc": "2.0", **reply["notify"]}))
            continue
        if "raw" in reply:
            write(reply["raw"])
            break
        message = {"jsonrpc": "2.0", "id": reply.get("id", request["id"])}
        if "error" in reply:
            message["error"] = reply["error"]
        else:
            message["result"] = reply.get("result")
        write(json.dumps(message))
        break
    if not replies:
        break
