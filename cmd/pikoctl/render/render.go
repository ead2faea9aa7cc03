package render

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/pikod/pikod/contracts"
)

// Hints word the next step in the reader's terms. A nil function leaves
// its step out.
type Hints struct {
	// Respond says how to answer the pending server request id.
	Respond func(id string) string
	// Read says how to read the changed resource uri of server.
	Read func(server, uri string) string
}

// Commands are pikoctl's hints: the command that takes the next step.
var Commands = Hints{
	Respond: func(id string) string { return "answer with 'pikoctl mcp respond " + id + "'" },
	Read: func(server, uri string) string {
		return "read it with 'pikoctl mcp read " + server + " " + ShellArg(uri) + "'"
	},
}

func safe(s string) string { return contracts.SafeText(s, contracts.OneLine, 0) }

// Event says what ev reports, without its time, sequence and server (the
// caller lays those out). A kind this pikoctl does not know yet gives its
// data as sent. A request's id follows when the event belongs to one.
func Event(ev contracts.EventParams, h Hints) string {
	var what string
	switch ev.Kind {
	case contracts.EventState:
		var d contracts.StateEventData
		if json.Unmarshal(ev.Data, &d) == nil {
			what = d.State
			if d.LastError != "" {
				what += ": " + d.LastError
			}
		}
	case contracts.EventCatalog:
		var d contracts.CatalogEventData
		if json.Unmarshal(ev.Data, &d) == nil {
			what = fmt.Sprintf("%s read again: %d tools, %d resources, %d resource templates, %d prompts",
				strings.Join(d.Lists, ", "), d.Counts.Tools, d.Counts.Resources, d.Counts.ResourceTemplates, d.Counts.Prompts)
			if !d.Complete {
				what += " (INCOMPLETE: " + d.Problem + ")"
			}
			if len(d.ChangedTools) > 0 {
				what += "; definition changed: " + strings.Join(d.ChangedTools, ", ")
			}
		}
	case contracts.EventTask:
		var t contracts.TaskInfo
		if json.Unmarshal(ev.Data, &t) == nil {
			what = "task " + t.TaskID + " " + t.Status
			if t.StatusMessage != "" {
				what += ": " + t.StatusMessage
			}
		}
	case contracts.EventResource:
		var d contracts.ResourceEventData
		if json.Unmarshal(ev.Data, &d) == nil && d.URI != "" {
			what = "changed: " + d.URI
			if d.Title != "" {
				what += " (" + d.Title + ")"
			}
			if h.Read != nil {
				what += "; " + h.Read(ev.Server, d.URI)
			}
		}
	case contracts.EventRequest:
		var d contracts.RequestEventData
		if json.Unmarshal(ev.Data, &d) == nil && d.ID != "" {
			what = Request(d, h)
		}
	case contracts.EventLog:
		var e contracts.LogEntry
		if json.Unmarshal(ev.Data, &e) == nil {
			what = LogEntry(e)
		}
	}
	if what == "" {
		what = string(ev.Data)
	}
	if len(ev.RequestID) > 0 {
		what += " (request " + string(ev.RequestID) + ")"
	}
	return safe(what)
}

// Request says what happened to a server request and, for one that
// waits, how to answer it.
func Request(d contracts.RequestEventData, h Hints) string {
	kind := d.Method
	switch d.Method {
	case "elicitation/create":
		kind = "question (elicitation)"
	case "sampling/createMessage":
		kind = "completion (sampling)"
	}
	line := d.ID + ", a " + kind
	if d.Tool != "" {
		line += " during " + d.Tool
	}
	if d.State == contracts.RequestPending {
		line += ", waits for you"
	} else {
		line += ": " + d.State
	}
	if d.Message != "" {
		line += ": " + strconv.Quote(contracts.SafeText(d.Message, contracts.OneLine, 120))
	}
	if d.Reason != "" {
		line += " (" + d.Reason + ")"
	}
	if d.State == contracts.RequestPending && h.Respond != nil {
		line += "; " + h.Respond(d.ID)
	}
	return safe(line)
}

// LogEntry is a server's log entry without its time: the level (padded to
// line up), the logger, and the data (a string as text, anything else as
// JSON).
func LogEntry(e contracts.LogEntry) string {
	logger := ""
	if e.Logger != "" {
		logger = " " + safe(e.Logger) + ":"
	}
	var text string
	if err := json.Unmarshal(e.Data, &text); err != nil {
		text = string(e.Data)
	}
	if e.Truncated {
		text += " (truncated)"
	}
	return fmt.Sprintf("%-9s%s %s", safe(e.Level), logger, safe(text))
}

// ShellArg quotes s for a POSIX shell when it needs it.
func ShellArg(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
