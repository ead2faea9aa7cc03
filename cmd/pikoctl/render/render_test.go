package render

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// An event reads the same wherever it is printed: only the next step is
// the reader's own, and a server's escape sequences never reach the
// terminal.
func TestEventWords(t *testing.T) {
	keys := Hints{Respond: func(string) string { return "6 answers it" }}
	for _, c := range []struct {
		name, kind, data string
		hints            Hints
		want             string
	}{
		{"state", contracts.EventState, `{"state":"failed","lastError":"exit 1"}`, Commands, "failed: exit 1"},
		{"catalog", contracts.EventCatalog, `{"lists":["tools"],"complete":false,"problem":"page 3 failed","counts":{"tools":4,"prompts":1},"changedTools":["add"]}`, Commands,
			"tools read again: 4 tools, 0 resources, 0 resource templates, 1 prompts (INCOMPLETE: page 3 failed); definition changed: add"},
		{"task", contracts.EventTask, `{"taskId":"t1","status":"working","statusMessage":"half"}`, Commands, "task t1 working: half"},
		{"resource, command", contracts.EventResource, `{"uri":"file:///a b","title":"A"}`, Commands,
			"changed: file:///a b (A); read it with 'pikoctl mcp read fx 'file:///a b''"},
		{"resource, no hint", contracts.EventResource, `{"uri":"file:///a"}`, keys, "changed: file:///a"},
		{"request, command", contracts.EventRequest, `{"id":"req_1","method":"elicitation/create","state":"pending","tool":"ask","message":"who?"}`, Commands,
			`req_1, a question (elicitation) during ask, waits for you: "who?"; answer with 'pikoctl mcp respond req_1'`},
		{"request, key", contracts.EventRequest, `{"id":"req_1","method":"sampling/createMessage","state":"pending"}`, keys,
			"req_1, a completion (sampling), waits for you; 6 answers it"},
		{"request, ended", contracts.EventRequest, `{"id":"req_1","method":"roots/list","state":"expired","reason":"request_expired"}`, keys,
			"req_1, a roots/list: expired (request_expired)"},
		{"log", contracts.EventLog, `{"level":"info","logger":"fx\u001b[31m","data":"hello \u001b[2Jred","truncated":true}`, Commands,
			`info      fx\u{001B}[31m: hello \u{001B}[2Jred (truncated)`},
		{"unknown kind", "future", `{"a":1}`, Commands, `{"a":1}`},
	} {
		ev := contracts.EventParams{Kind: c.kind, Server: "fx", Data: json.RawMessage(c.data)}
		if got := Event(ev, c.hints); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
	ev := contracts.EventParams{Kind: contracts.EventState, Data: json.RawMessage(`{"state":"connected"}`), RequestID: json.RawMessage(`7`)}
	if got := Event(ev, Commands); got != "connected (request 7)" {
		t.Errorf("an event of a request: %q", got)
	}
	long := strings.Repeat("x", 300)
	d := contracts.RequestEventData{ID: "req_2", Method: "elicitation/create", State: contracts.RequestPending, Message: long}
	if got := Request(d, Hints{}); strings.Contains(got, long) || strings.Contains(got, "respond") {
		t.Errorf("a long message is not cut, or a hint came without Hints: %q", got)
	}
}
