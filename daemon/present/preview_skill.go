package present

import (
	"fmt"
	"unicode/utf8"

	"github.com/pikod/pikod/contracts"
)

// PreviewText returns a bounded copy of a text a server wrote (a skill's
// SKILL.md or one of its files), made safe to show (contracts.SafeText,
// lines): a text longer than lim.TextChars keeps its first two thirds and
// last third of that budget around a notice, and cut says so. The text must
// be redacted already: the cut comes after.
func PreviewText(text string, lim PreviewLimits) (preview string, cut bool) {
	lim = lim.withDefaults()
	n := utf8.RuneCountInString(text)
	if n <= lim.TextChars {
		return contracts.SafeText(text, contracts.Lines, 0), false
	}
	head := lim.TextChars * 2 / 3
	tail := lim.TextChars - head
	// Cut before rendering, so no rendered character is split.
	return contracts.SafeText(runePrefix(text, head), contracts.Lines, 0) +
		fmt.Sprintf("\n[… %d characters omitted here; %s …]\n", n-head-tail, readWhole) +
		contracts.SafeText(runeSuffix(text, tail), contracts.Lines, 0), true
}
