package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/pikod/pikod/contracts"
	"github.com/spf13/cobra"
)

func (a *app) newRequestCmds() []*cobra.Command {
	return []*cobra.Command{a.newRequestsCmd(), a.newRequestCmd(), a.newRespondCmd()}
}

func (a *app) newRequestsCmd() *cobra.Command {
	var server, state string
	cmd := &cobra.Command{
		Use:   "requests",
		Short: "List the server requests (elicitation, sampling) waiting for you, and the recently decided ones",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var res contracts.RequestsResult
			if printed, err := a.callOrPrint(cmd.Context(), contracts.MethodMCPRequests, contracts.RequestsParams{Server: server, State: state}, &res); printed || err != nil {
				return err
			}
			w := &errWriter{w: a.stdout}
			if len(res.Requests) == 0 {
				fmt.Fprintln(w, "no server requests")
				return w.err
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "REQUEST\tSTATE\tSERVER\tKIND\tTOOL\tEXPIRES\tMESSAGE")
			for _, r := range res.Requests {
				kind := r.Kind
				if r.Mode != "" {
					kind += " (" + r.Mode + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(r.ID), cell(r.State), cell(r.Server), cell(kind), cell(clip(r.Tool, 30)),
					cell(r.ExpiresAt), cell(clip(r.Message, 60)))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			return w.err
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "only this server's requests")
	cmd.Flags().StringVar(&state, "state", "", "only requests in this state (pending, answered, declined, cancelled, expired)")
	return cmd
}

func (a *app) readRequest(ctx context.Context, id string) (*contracts.ServerRequestInfo, json.RawMessage, error) {
	var raw json.RawMessage
	if err := a.call(ctx, contracts.MethodMCPRequestsRead, contracts.RequestReadParams{RequestID: id}, &raw); err != nil {
		return nil, nil, err
	}
	var r contracts.ServerRequestInfo
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, nil, fmt.Errorf("decoding the request: %w", err)
	}
	return &r, raw, nil
}

func (a *app) newRequestCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "request REQ_ID",
		Short: "Show one server request exactly (its params as the server sent them)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, raw, err := a.readRequest(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if a.jsonOut {
				return printRaw(a.stdout, raw)
			}
			w := &errWriter{w: a.stdout}
			writeRequest(w, r, true)
			return w.err
		},
	}
}

// writeRequest shows a request. The daemon made every server string safe
// to show; clean() is a second guard.
func writeRequest(w *errWriter, r *contracts.ServerRequestInfo, params bool) {
	fmt.Fprintf(w, "request:   %s (%s)\n", clean(r.ID), clean(r.State))
	fmt.Fprintf(w, "server:    %s\n", clean(r.Server))
	kind := r.Kind
	if r.Mode != "" {
		kind += " (" + r.Mode + " mode)"
	}
	fmt.Fprintf(w, "kind:      %s\n", clean(kind))
	if r.Tool != "" {
		how := "asked during the call of"
		if r.InputRequired {
			how = "input the server needs to finish the call of"
		}
		fmt.Fprintf(w, "call:      %s %s\n", how, clean(r.Tool))
	}
	fmt.Fprintf(w, "created:   %s\nexpires:   %s (or when its call ends)\n", clean(r.CreatedAt), clean(r.ExpiresAt))
	if r.Reason != "" {
		fmt.Fprintf(w, "reason:    %s\n", clean(r.Reason))
	}
	fmt.Fprintln(w, "the server says:")
	for line := range strings.SplitSeq(r.Message, "\n") {
		fmt.Fprintf(w, "  %s\n", clean(line))
	}
	if r.URL != "" {
		fmt.Fprintf(w, "url:       %s\ndomain:    %s\n", clean(r.URL), clean(r.Domain))
		if r.DomainASCII != "" {
			fmt.Fprintf(w, "punycode:  %s (the domain as it is really spelt: an internationalised name, compare this form, not the letters above)\n", clean(r.DomainASCII))
		}
		if r.DomainUnicode != "" {
			fmt.Fprintf(w, "unicode:   %s (how a browser may show this punycode domain)\n", clean(r.DomainUnicode))
		}
		if len(r.DomainScripts) > 0 {
			names := make([]string, len(r.DomainScripts))
			for i, n := range r.DomainScripts {
				names[i] = clean(n)
			}
			fmt.Fprintf(w, "WARNING:   the domain mixes scripts (%s): letters of one can pass for another's (a Cyrillic а for a Latin a); it may imitate a domain you know\n",
				strings.Join(names, ", "))
		}
		fmt.Fprintln(w, "pikod never opens it. Open it yourself only if you trust that domain, and enter no credentials you would not give this server.")
	}
	if r.MaxTokens > 0 {
		fmt.Fprintf(w, "maxTokens: %d\n", r.MaxTokens)
	}
	if r.Proposal != "" {
		fmt.Fprintln(w, "proposed answer (from a local tool; sent only if you choose it):")
		for line := range strings.SplitSeq(r.Proposal, "\n") {
			fmt.Fprintf(w, "  %s\n", clean(line))
		}
	}
	if params && len(r.Params) > 0 {
		var b bytes.Buffer
		if json.Indent(&b, r.Params, "  ", "  ") == nil {
			fmt.Fprintln(w, "params (exactly as sent):")
			for line := range strings.SplitSeq(b.String(), "\n") {
				fmt.Fprintf(w, "  %s\n", clean(line))
			}
		}
	}
}

// field is one property of a form elicitation's requested schema.
type field struct {
	name        string
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Format      string          `json:"format"`
	Default     json.RawMessage `json:"default"`
	Enum        []any           `json:"enum"`
	OneOf       []struct {
		Const any    `json:"const"`
		Title string `json:"title"`
	} `json:"oneOf"`
	Items *struct {
		Type  string `json:"type"`
		Enum  []any  `json:"enum"`
		AnyOf []struct {
			Const any `json:"const"`
		} `json:"anyOf"`
	} `json:"items"`
	// The bounds elicitation's schemas may set (string lengths count
	// characters); check applies them to each answer as it is typed.
	MinLength *int     `json:"minLength"`
	MaxLength *int     `json:"maxLength"`
	Minimum   *float64 `json:"minimum"`
	Maximum   *float64 `json:"maximum"`
	MinItems  *int     `json:"minItems"`
	MaxItems  *int     `json:"maxItems"`
}

// choices are the values the field allows (its enum or oneOf consts, or
// its items' for an array), nil when any value of its type goes.
func (f field) choices() []any {
	var out []any
	if f.Items != nil {
		out = append(out, f.Items.Enum...)
		for _, o := range f.Items.AnyOf {
			out = append(out, o.Const)
		}
		return out
	}
	out = append(out, f.Enum...)
	for _, o := range f.OneOf {
		out = append(out, o.Const)
	}
	return out
}

// check says what is wrong with val, the field's answer as parse made it,
// by the requested schema: a choice not offered, a length, number or
// count out of bounds. pikod checks the whole answer again before it is
// sent; checking each field here asks that one again instead.
func (f field) check(val json.RawMessage) error {
	var v any
	if err := json.Unmarshal(val, &v); err != nil {
		return err
	}
	offered := func(x any) bool {
		for _, c := range f.choices() {
			if fmt.Sprint(c) == fmt.Sprint(x) {
				return true
			}
		}
		return false
	}
	// The messages hold none of the server's text: they are pikod's,
	// shown unmarked inside the server's frame.
	switch x := v.(type) {
	case string:
		if len(f.choices()) > 0 && !offered(x) {
			return errors.New("type one of the choices shown above")
		}
		n := utf8.RuneCountInString(x)
		if f.MinLength != nil && n < *f.MinLength {
			return fmt.Errorf("type at least %d characters (that was %d)", *f.MinLength, n)
		}
		if f.MaxLength != nil && n > *f.MaxLength {
			return fmt.Errorf("type at most %d characters (that was %d)", *f.MaxLength, n)
		}
	case float64:
		if len(f.choices()) > 0 && !offered(x) {
			return errors.New("type one of the choices shown above")
		}
		if f.Minimum != nil && x < *f.Minimum {
			return fmt.Errorf("type a number of at least %s", strconv.FormatFloat(*f.Minimum, 'g', -1, 64))
		}
		if f.Maximum != nil && x > *f.Maximum {
			return fmt.Errorf("type a number of at most %s", strconv.FormatFloat(*f.Maximum, 'g', -1, 64))
		}
	case []any:
		for _, e := range x {
			if len(f.choices()) > 0 && !offered(e) {
				return errors.New("choose only among the choices shown above, comma-separated")
			}
		}
		if f.MinItems != nil && len(x) < *f.MinItems {
			return fmt.Errorf("choose at least %d (that was %d)", *f.MinItems, len(x))
		}
		if f.MaxItems != nil && len(x) > *f.MaxItems {
			return fmt.Errorf("choose at most %d (that was %d)", *f.MaxItems, len(x))
		}
	}
	return nil
}

// bounds describes the field's bounds for its prompt ("" for none).
func (f field) bounds() string {
	num := func(p *float64) string { return strconv.FormatFloat(*p, 'g', -1, 64) }
	between := func(lo, hi, unit string) string {
		switch {
		case lo != "" && hi != "":
			return lo + " to " + hi + unit
		case lo != "":
			return "at least " + lo + unit
		case hi != "":
			return "at most " + hi + unit
		}
		return ""
	}
	itoa := func(p *int) string {
		if p == nil {
			return ""
		}
		return strconv.Itoa(*p)
	}
	ftoa := func(p *float64) string {
		if p == nil {
			return ""
		}
		return num(p)
	}
	var parts []string
	if b := between(itoa(f.MinLength), itoa(f.MaxLength), " characters"); b != "" {
		parts = append(parts, b)
	}
	if b := between(ftoa(f.Minimum), ftoa(f.Maximum), ""); b != "" {
		parts = append(parts, b)
	}
	if b := between(itoa(f.MinItems), itoa(f.MaxItems), " choices"); b != "" {
		parts = append(parts, b)
	}
	return strings.Join(parts, ", ")
}

// formFields reads the properties of a requested schema in their order.
func formFields(schema json.RawMessage) ([]field, map[string]bool, error) {
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, nil, fmt.Errorf("reading the requested schema: %w", err)
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	if len(s.Properties) == 0 {
		return nil, required, nil
	}
	dec := json.NewDecoder(bytes.NewReader(s.Properties))
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("reading the requested schema's properties: %w", err)
	}
	var out []field
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		name, _ := t.(string)
		var f field
		if err := dec.Decode(&f); err != nil {
			return nil, nil, fmt.Errorf("reading property %q: %w", name, err)
		}
		f.name = name
		out = append(out, f)
	}
	return out, required, nil
}

var secretName = regexp.MustCompile(`(?i)pass|secret|token|key|pin\b|credential|otp|cvv`)

// masked says whether a field's input is hidden: format password, or a
// name or title that looks like a secret.
func (f field) masked() bool {
	return f.Format == "password" || secretName.MatchString(f.name) || secretName.MatchString(f.Title)
}

// pikodWords are the words of pikod's own prompts (the approval
// passphrase, the digest characters, approving): a server field named or
// titled so may be fishing for what pikod asks.
var pikodWords = regexp.MustCompile(`(?i)pass\s*-?phrase|digest|approv|pikod|pikoctl|owner`)

// mimicsPikod says whether the field's name, title or description looks
// like one of pikod's own prompts.
func (f field) mimicsPikod() bool {
	return pikodWords.MatchString(f.name) || pikodWords.MatchString(f.Title) || pikodWords.MatchString(f.Description)
}

// parse turns what the owner typed into the field's JSON value.
func (f field) parse(s string) (json.RawMessage, error) {
	switch f.Type {
	case "integer":
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, errors.New("type a whole number")
		}
		return json.Marshal(n)
	case "number":
		n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, errors.New("type a number")
		}
		return json.Marshal(n)
	case "boolean":
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "y", "yes", "true":
			return json.RawMessage("true"), nil
		case "n", "no", "false":
			return json.RawMessage("false"), nil
		}
		return nil, errors.New("type yes or no")
	case "array":
		var vals []string
		for v := range strings.SplitSeq(s, ",") {
			if v = strings.TrimSpace(v); v != "" {
				vals = append(vals, v)
			}
		}
		return json.Marshal(vals)
	}
	return json.Marshal(s)
}

func (f field) describe() string {
	var b strings.Builder
	b.WriteString(clean(f.name))
	if f.Title != "" && f.Title != f.name {
		b.WriteString(" — " + clean(f.Title))
	}
	t := f.Type
	if t == "" {
		t = "string"
	}
	b.WriteString(" (" + clean(t))
	var choices []string
	for _, e := range f.Enum {
		choices = append(choices, clean(fmt.Sprint(e)))
	}
	for _, o := range f.OneOf {
		choices = append(choices, clean(fmt.Sprint(o.Const)))
	}
	if f.Items != nil {
		for _, e := range f.Items.Enum {
			choices = append(choices, clean(fmt.Sprint(e)))
		}
		for _, o := range f.Items.AnyOf {
			choices = append(choices, clean(fmt.Sprint(o.Const)))
		}
		if len(choices) > 0 {
			b.WriteString(", comma-separated")
		}
	}
	if len(choices) > 0 {
		b.WriteString("; one of " + strings.Join(choices, ", "))
	}
	if bounds := f.bounds(); bounds != "" {
		b.WriteString("; " + bounds)
	}
	if len(f.Default) > 0 {
		b.WriteString("; default " + clean(string(f.Default)))
	}
	b.WriteString(")")
	if f.Description != "" {
		b.WriteString(": " + clean(f.Description))
	}
	return b.String()
}

func (a *app) newRespondCmd() *cobra.Command {
	var decline, cancel bool
	cmd := &cobra.Command{
		Use:   "respond REQ_ID",
		Short: "Answer a server request at the terminal: accept (with the answer), decline or cancel",
		Long: `respond shows the server request and asks you, on the terminal (/dev/tty,
discarding anything typed ahead), what to do. A form elicitation asks each
field in turn (empty takes the schema's default, or leaves it out);
secret-looking fields are asked with echo off. Each answer is checked as
it is typed (type, required, choices, lengths, bounds) and a wrong one is
asked again, the others kept; Ctrl-C sends nothing (exit 130). A url
elicitation shows the URL and its domain; pikod never opens it. A sampling
takes one line of text you type, or the answer a local tool proposed.
--decline and --cancel
answer so without asking. Like approve, respond is terminal-only (and asks
the owner approval passphrase when one is set). Do not enter credentials
you would not give that server.`,
		Args: cobra.ExactArgs(1),
		RunE: onCancel("nothing was sent (the request still waits)", func(cmd *cobra.Command, args []string) error {
			if decline && cancel {
				return errors.New("give --decline or --cancel, not both")
			}
			hint := "run 'pikoctl mcp respond " + args[0] + "' yourself in your terminal"
			if !a.stdinIsTerminal() {
				return contracts.WithHint(errors.New("stdin is not the terminal: answering needs you typing at the terminal, not a pipe"), hint)
			}
			tty, err := a.openTTY()
			if err != nil {
				return contracts.WithHint(err, hint)
			}
			defer tty.Close()
			r, _, err := a.readRequest(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			w := &errWriter{w: a.stderr}
			writeRequest(w, r, false)
			if r.State != contracts.RequestPending {
				return fmt.Errorf("request %s is %s and cannot be answered again", clean(r.ID), clean(r.State))
			}
			gate, err := a.approvalGate(cmd.Context())
			if err != nil {
				return err
			}
			var res contracts.RespondResult
			for attempt := 0; ; attempt++ {
				params := contracts.RespondParams{RequestID: r.ID}
				switch {
				case decline:
					params.Action = contracts.RespondDecline
				case cancel:
					params.Action = contracts.RespondCancel
				default:
					if err := a.askAnswer(tty, r, &params, gate.PassphraseSet); err != nil {
						return err
					}
				}
				err = a.sendAnswer(cmd.Context(), tty, r, gate, &params, &res)
				var ce *contracts.Error
				if errors.As(err, &ce) && ce.Reason() == contracts.ReasonAnswerInvalid && attempt < 2 && !decline && !cancel {
					// pikod's check of the whole answer found what the
					// checks of each field did not: nothing was sent,
					// and the request still waits. Ask again.
					fmt.Fprintf(a.stderr, "\nnot sent: %s\nanswer again:\n", cleanLines(ce.Message))
					continue
				}
				if !errors.As(err, &ce) || ce.Reason() != contracts.ReasonProposalChanged || attempt >= 2 {
					break
				}
				// A local tool replaced the proposal after it was shown:
				// nothing was sent. Show the request again and ask again.
				fmt.Fprintln(a.stderr, "\nthe proposed answer changed after you read it: nothing was sent. Here is the request again:")
				if r, _, err = a.readRequest(cmd.Context(), args[0]); err != nil {
					return err
				}
				writeRequest(w, r, false)
				if r.State != contracts.RequestPending {
					return fmt.Errorf("request %s is %s and cannot be answered again", clean(r.ID), clean(r.State))
				}
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				b, _ := json.Marshal(res)
				fmt.Fprintf(a.stdout, "%s\n", b)
				return nil
			}
			fmt.Fprintf(a.stdout, "request %s: %s\n", clean(res.RequestID), clean(res.State))
			return nil
		}),
	}
	cmd.Flags().BoolVar(&decline, "decline", false, "decline the request without asking")
	cmd.Flags().BoolVar(&cancel, "cancel", false, "cancel (dismiss) the request without asking")
	return cmd
}

// sendAnswer asks pikod's own questions (after a visible boundary, when a
// passphrase is set) and sends params. An answer holding the passphrase
// typed at pikod's prompt is refused here, before anything is sent (the
// daemon refuses it too).
func (a *app) sendAnswer(ctx context.Context, tty ttyIO, r *contracts.ServerRequestInfo, gate contracts.ApprovalsStatus,
	params *contracts.RespondParams, res *contracts.RespondResult) error {
	var err error
	if gate.PassphraseSet {
		if params.Passphrase, err = askPassphrase(tty, pikodAsks(r)+"pikod's approval passphrase (pikod's own, for pikod only): "); err != nil {
			return err
		}
		if err := holdsPassphrase(*params); err != nil {
			return err
		}
	}
	err = a.call(ctx, contracts.MethodMCPRequestsRespond, *params, res)
	var ce *contracts.Error
	if params.Passphrase == "" && errors.As(err, &ce) && ce.Reason() == contracts.ReasonPassphraseRequired {
		if params.Passphrase, err = askPassphrase(tty, pikodAsks(r)+"an approval passphrase is set; pikod's approval passphrase: "); err != nil {
			return err
		}
		if err := holdsPassphrase(*params); err != nil {
			return err
		}
		err = a.call(ctx, contracts.MethodMCPRequestsRespond, *params, res)
	}
	return err
}

// pikodAsks is the boundary before pikod's own questions: what follows is
// pikod's, not the server's.
func pikodAsks(r *contracts.ServerRequestInfo) string {
	return fmt.Sprintf("\n════ pikod asks (not the server %s; nothing below goes to it) ════\n", clean(r.Server))
}

// holdsPassphrase refuses an answer in which a value is the passphrase
// just typed at pikod's prompt.
func holdsPassphrase(p contracts.RespondParams) error {
	if p.Passphrase == "" {
		return nil
	}
	is := func(v string) bool { return v == p.Passphrase || strings.TrimSpace(v) == p.Passphrase }
	found := is(p.Text)
	if !found && len(p.Content) > 0 {
		var content map[string]any
		if json.Unmarshal(p.Content, &content) == nil {
			for _, v := range content {
				if anyString(v, is) {
					found = true
					break
				}
			}
		}
	}
	if !found {
		return nil
	}
	return contracts.WithHint(errors.New("your answer to the server holds your approval passphrase: nothing was sent"),
		"pikod never needs it inside a server's questions: answer again, and type it only after \"pikod asks\"")
}

// anyString reports whether match holds for a string in v (a decoded JSON
// value), at any depth.
func anyString(v any, match func(string) bool) bool {
	switch v := v.(type) {
	case string:
		return match(v)
	case []any:
		for _, e := range v {
			if anyString(e, match) {
				return true
			}
		}
	case map[string]any:
		for _, e := range v {
			if anyString(e, match) {
				return true
			}
		}
	}
	return false
}

// askAnswer asks the owner what to answer and fills params. Everything
// the server supplied is asked inside a frame, each line marked with the
// server's id; passphrase says pikod's own passphrase prompt follows, so
// the owner confirms the answers first and that prompt never comes
// straight after a masked server field.
func (a *app) askAnswer(tty ttyIO, r *contracts.ServerRequestInfo, params *contracts.RespondParams, passphrase bool) error {
	choice, err := tty.Ask("\nAnswer it? Type accept, decline or cancel (a/d/c): ")
	if err != nil {
		return err
	}
	switch strings.ToLower(strings.TrimSpace(choice)) {
	case "a", "accept":
		params.Action = contracts.RespondAccept
	case "d", "decline":
		params.Action = contracts.RespondDecline
		return nil
	case "c", "cancel":
		params.Action = contracts.RespondCancel
		return nil
	default:
		return &statusExit{code: exitFailure, msg: "no answer chosen: nothing was sent (the request still waits)"}
	}
	switch {
	case r.Kind == contracts.RequestKindSampling:
		if r.Proposal != "" {
			yes, err := tty.Ask("Send the proposed answer shown above as it is? (y/N): ")
			if err != nil {
				return err
			}
			if s := strings.ToLower(strings.TrimSpace(yes)); s == "y" || s == "yes" {
				// Bound to the proposal shown: a replaced one fails.
				params.UseProposal, params.ProposalDigest = true, r.ProposalDigest
				return nil
			}
		}
		text, err := tty.Ask("Your answer (one line of text): ")
		if err != nil {
			return err
		}
		if strings.TrimSpace(text) == "" {
			return &statusExit{code: exitFailure, msg: "empty answer: nothing was sent (the request still waits)"}
		}
		params.Text = text
	case r.Mode == contracts.ElicitURL:
		// Accepting a url elicitation sends no content.
	default:
		fields, required, err := formFields(r.Schema)
		if err != nil {
			return err
		}
		srv := clean(r.Server)
		tag := srv + " │ "
		content := map[string]json.RawMessage{}
		var summary []string
		frame := fmt.Sprintf("\n──── the server %s asks (its words, not pikod's: every line of it starts %q) ────\n", srv, tag)
		for _, f := range fields {
			var prompt strings.Builder
			prompt.WriteString(frame)
			frame = ""
			prompt.WriteString(tag + f.describe())
			if required[f.name] {
				prompt.WriteString(" [required]")
			}
			prompt.WriteString("\n")
			if f.mimicsPikod() {
				prompt.WriteString(tag + "WARNING: this field of the server's looks like one of pikod's own prompts (passphrase, digest, approve). " +
					"pikod never asks those inside a server's questions: never type your approval passphrase or a digest here.\n")
			}
			prompt.WriteString(tag + clean(f.name) + ": ")
			for {
				var v string
				if f.masked() {
					v, err = tty.AskHidden(strings.TrimSuffix(prompt.String(), ": ") + " (hidden): ")
				} else {
					v, err = tty.Ask(prompt.String())
				}
				if err != nil {
					return err
				}
				if v == "" {
					if required[f.name] && len(f.Default) == 0 {
						// pikod's words, so not marked as the server's (nor
						// holding any of the server's text).
						fmt.Fprintln(a.stderr, "not accepted: this field is required and has no default: type a value (Ctrl-C sends nothing)")
						continue
					}
					summary = append(summary, tag+clean(f.name)+": (nothing: the default, or left out)")
					break // the default applies, or the field stays out
				}
				val, perr := f.parse(v)
				if perr == nil {
					perr = f.check(val)
				}
				if perr != nil {
					// That field alone is asked again: the others stay.
					fmt.Fprintf(a.stderr, "not accepted: %s; try again\n", perr)
					continue
				}
				content[f.name] = val
				shown := clean(string(val))
				if f.masked() {
					shown = "(hidden)"
				}
				summary = append(summary, tag+clean(f.name)+": "+shown)
				break
			}
		}
		end := fmt.Sprintf("──── end of what the server %s asks ────\n", srv)
		if passphrase {
			// pikod's passphrase prompt comes next: a question of pikod's
			// stands between it and the server's last field.
			yes, err := tty.Ask(end + "\nYour answers for the server " + srv + ":\n" + strings.Join(summary, "\n") +
				"\nSend them to the server " + srv + "? (y/N): ")
			if err != nil {
				return err
			}
			if s := strings.ToLower(strings.TrimSpace(yes)); s != "y" && s != "yes" {
				fmt.Fprintln(a.stderr, "not sent: nothing was sent (the request still waits)")
				return &statusExit{code: exitFailure, msg: "not sent"}
			}
		} else {
			fmt.Fprint(a.stderr, end)
		}
		b, err := json.Marshal(content)
		if err != nil {
			return err
		}
		params.Content = b
	}
	return nil
}
