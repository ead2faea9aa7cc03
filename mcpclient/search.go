package mcpclient

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/pikod/pikod/contracts"
)

// BM25 parameters (the usual ones) and the weight of each field: a term
// in a tool's name says more than one in its description.
const (
	bm25K1       = 1.2
	bm25B        = 0.75
	weightName   = 3
	weightTitle  = 2
	weightParams = 2
	weightDesc   = 1
)

// RankTools returns the limit best tools for query by BM25 over a document
// made of each tool's name, title, parameter names and description (the
// fields repeated by their weight).
func RankTools(query string, tools []contracts.CatalogTool, limit int) []contracts.SearchHit {
	terms := uniqueTerms(searchTerms(query))
	if len(terms) == 0 || len(tools) == 0 {
		return []contracts.SearchHit{}
	}
	docs := make([]map[string]int, len(tools))
	lens := make([]int, len(tools))
	df := map[string]int{}
	total := 0
	for i, t := range tools {
		tf := map[string]int{}
		add := func(text string, w int) {
			for _, term := range searchTerms(text) {
				tf[term] += w
				lens[i] += w
			}
		}
		add(t.OriginalName, weightName)
		add(t.Title, weightTitle)
		add(strings.Join(paramNames(t.InputSchema), " "), weightParams)
		add(t.Description, weightDesc)
		docs[i] = tf
		total += lens[i]
		for term := range tf {
			df[term]++
		}
	}
	n := float64(len(tools))
	avg := float64(total) / n
	if avg == 0 {
		avg = 1
	}
	var hits []contracts.SearchHit
	for i, t := range tools {
		score := 0.0
		for _, term := range terms {
			f := float64(docs[i][term])
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (n-float64(df[term])+0.5)/(float64(df[term])+0.5))
			score += idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(lens[i])/avg))
		}
		if score <= 0 {
			continue
		}
		hits = append(hits, contracts.SearchHit{
			Server: t.Server, Tool: t.OriginalName, Name: t.Name, Title: t.Title,
			Description: t.Description, Grant: t.Grant, Score: math.Round(score*1000) / 1000,
		})
	}
	slices.SortFunc(hits, func(a, b contracts.SearchHit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Server, b.Server); c != 0 {
			return c
		}
		return cmp.Compare(a.Tool, b.Tool)
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	if hits == nil {
		hits = []contracts.SearchHit{}
	}
	return hits
}

// paramNames returns the property names of an input schema's top level.
func paramNames(schema json.RawMessage) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	out := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// searchTerms splits text into lowercase terms at every non-letter,
// non-digit and at lower-to-upper case changes (readFile, read_file and
// read-file give read, file), drops one-letter terms and stop words, and
// folds simple plurals and -ing forms (files, reading).
func searchTerms(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 1 {
			if t := stem(strings.ToLower(string(cur))); !stopWords[t] {
				out = append(out, t)
			}
		}
		cur = cur[:0]
	}
	var prev rune
	for _, r := range text {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && unicode.IsLower(prev) {
				flush()
			}
			cur = append(cur, r)
		default:
			flush()
		}
		prev = r
	}
	flush()
	return out
}

// stem folds the commonest English inflections so "files" finds "file"
// and "reading" finds "read". It is deliberately tiny: a wrong fold costs
// a little ranking, never a result.
func stem(t string) string {
	switch {
	case len(t) > 5 && strings.HasSuffix(t, "ing"):
		return t[:len(t)-3]
	case len(t) > 4 && strings.HasSuffix(t, "ies"):
		return t[:len(t)-3] + "y"
	case len(t) > 3 && strings.HasSuffix(t, "s") && !strings.HasSuffix(t, "ss") && !strings.HasSuffix(t, "us"):
		return t[:len(t)-1]
	}
	return t
}

// stopWords carry no meaning for ranking.
var stopWords = map[string]bool{
	"the": true, "an": true, "and": true, "or": true, "of": true, "to": true, "in": true, "on": true,
	"for": true, "with": true, "is": true, "it": true, "this": true, "that": true, "be": true,
	"by": true, "as": true, "at": true, "from": true, "me": true, "my": true, "all": true,
}

func uniqueTerms(ts []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
