// Package present words what a caller and the owner are shown of a
// result or an action: the bounded previews of tool results, resources,
// prompts and skills, and an action's summary, advice and review. It
// stores nothing and sends nothing; the daemon hands it redacted results
// and ledger records, and puts its answers on the wire.
//
// Files, by concern:
//
//	preview.go       Preview: a tool result cut to PreviewLimits (text around
//	                 a notice, images and structured content bounded, long
//	                 text blocks counted and cut without decoding them whole)
//	preview_read.go  PreviewResource and PreviewPrompt
//	preview_skill.go PreviewText: a skill's SKILL.md
//	action.go        Summary and Advice: an action as the list shows it, and
//	                 what the owner can do about it in its state
//	review.go        Review: exactly what approving sends, every string made
//	                 safe to show
//
// present may import contracts and approvals (for its record types) only;
// never mcpclient, vault, rpc or daemon.
package present
