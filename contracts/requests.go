package contracts

import (
	"encoding/json"
)

// States of a pending server request (extensions.mcp.requests).
const (
	// RequestPending: the server waits for the owner's answer.
	RequestPending = "pending"
	// RequestAnswered: the owner accepted; the answer was sent.
	RequestAnswered = "answered"
	// RequestDeclined: the owner declined; the server was told.
	RequestDeclined = "declined"
	// RequestCancelled: the owner cancelled; the server was told.
	RequestCancelled = "cancelled"
	// RequestExpired: the call it belongs to ended, was cancelled or
	// lost its connection, or the request's own limit passed, before
	// the owner answered.
	RequestExpired = "expired"
)

// Actions of extensions.mcp.requests.respond.
const (
	RespondAccept  = "accept"
	RespondDecline = "decline"
	RespondCancel  = "cancel"
)

// Kinds of server requests that wait for the owner.
const (
	RequestKindElicitation = "elicitation"
	RequestKindSampling    = "sampling"
)

// Elicitation modes.
const (
	ElicitForm = "form"
	ElicitURL  = "url"
)

// MaxSamplingTokens bounds maxTokens of a sampling request pikod accepts.
const MaxSamplingTokens = 16384

// ServerRequestInfo is one server request waiting for (or decided by) the
// owner, the result of extensions.mcp.requests.read. Every string that came from the server is bounded, made safe to
// show and redacted.
type ServerRequestInfo struct {
	ID     string `json:"id"`
	Server string `json:"server"`
	// Method is elicitation/create or sampling/createMessage; Kind is
	// elicitation or sampling.
	Method string `json:"method"`
	Kind   string `json:"kind"`
	State  string `json:"state"`
	// Mode is form or url (elicitation only).
	Mode string `json:"mode,omitempty"`
	// Message is what the server says it wants (elicitation's message;
	// for sampling, the text of the last message).
	Message string `json:"message,omitempty"`
	// URL and Domain are a url-mode elicitation's (never opened by pikod).
	URL    string `json:"url,omitempty"`
	Domain string `json:"domain,omitempty"`
	// DomainASCII is Domain with every internationalised label in its
	// punycode form (xn--...), set only when it differs from Domain: the
	// spelling that tells a Cyrillic а from a Latin a. DomainUnicode is
	// the reverse, for a Domain sent as punycode: what a browser may show.
	DomainASCII   string `json:"domainAscii,omitempty"`
	DomainUnicode string `json:"domainUnicode,omitempty"`
	// DomainScripts lists the scripts the domain's letters mix (sorted),
	// when they are more than one a domain should hold: a look-alike warning.
	DomainScripts []string `json:"domainScripts,omitempty"`
	// Schema is a form elicitation's requestedSchema, exactly.
	Schema json.RawMessage `json:"schema,omitempty"`
	// Params are the request's params exactly as the server sent them
	// (only in requests.read).
	Params json.RawMessage `json:"params,omitempty"`
	// Tool is the tool whose call the request belongs to ("" when no
	// single call of the server was running); InputRequired says it came
	// from a 2026-07-28 input_required result (inputRequests) rather than
	// a request of its own.
	Tool          string `json:"tool,omitempty"`
	InputRequired bool   `json:"inputRequired,omitempty"`
	// Proposal is the sampling answer a local tool proposed
	// (requests.propose), shown to the owner, never sent without them.
	Proposal string `json:"proposal,omitempty"`
	// ProposalDigest is "sha256:" and the hex SHA-256 of Proposal's
	// bytes: requests.respond with useProposal must quote it, so the
	// owner sends exactly the proposal they read.
	ProposalDigest string `json:"proposalDigest,omitempty"`
	// MaxTokens is a sampling request's maxTokens.
	MaxTokens int `json:"maxTokens,omitempty"`
	// CreatedAt and ExpiresAt are RFC 3339 (UTC); the request expires at
	// ExpiresAt at the latest, earlier when its call ends.
	CreatedAt string `json:"createdAt"`
	ExpiresAt string `json:"expiresAt"`
	// Reason says why a request ended as it did (expired, refused).
	Reason string `json:"reason,omitempty"`
}

// RequestsParams is the params of extensions.mcp.requests: the pending
// requests, and those decided recently (bounded), newest first. Server
// and State filter.
type RequestsParams struct {
	Server string `json:"server,omitempty"`
	State  string `json:"state,omitempty"`
}

// RequestsResult is the result of extensions.mcp.requests.
type RequestsResult struct {
	Requests []ServerRequestInfo `json:"requests"`
}

// RequestReadParams is the params of extensions.mcp.requests.read.
type RequestReadParams struct {
	RequestID string `json:"requestId"`
}

// RespondParams is the params of extensions.mcp.requests.respond
// (terminal-only). Action is accept, decline or cancel. For an accepted
// form elicitation Content is the answer object (fields left out get the
// schema's defaults; the result must match the requested schema); for an
// accepted sampling Text is the answer (or UseProposal sends the proposal
// as it is, and ProposalDigest must be the ProposalDigest of the proposal
// the owner was shown: a proposal replaced since fails with
// proposal_changed and nothing is sent). A url elicitation is accepted
// without content. An answer in which a value equals the owner approval
// passphrase is refused (answer_is_passphrase) before anything is sent.
type RespondParams struct {
	RequestID      string          `json:"requestId"`
	Action         string          `json:"action"`
	Content        json.RawMessage `json:"content,omitempty"`
	Text           string          `json:"text,omitempty"`
	UseProposal    bool            `json:"useProposal,omitempty"`
	ProposalDigest string          `json:"proposalDigest,omitempty"`
	Passphrase     string          `json:"passphrase,omitempty"`
}

// RespondResult is the result of extensions.mcp.requests.respond and
// extensions.mcp.requests.propose.
type RespondResult struct {
	RequestID string `json:"requestId"`
	State     string `json:"state"`
}

// ProposeParams is the params of extensions.mcp.requests.propose: a local
// tool attaches a proposed answer (text) to a pending sampling request.
// It replaces an earlier proposal; nothing is sent until the owner
// decides at the terminal.
type ProposeParams struct {
	RequestID string `json:"requestId"`
	Text      string `json:"text"`
}

// RequestEventData is the Data of an EventRequest event.
type RequestEventData struct {
	ID      string `json:"id"`
	Method  string `json:"method"`
	State   string `json:"state"`
	Tool    string `json:"tool,omitempty"`
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason,omitempty"`
}
