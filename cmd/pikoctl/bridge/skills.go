package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pikod/pikod/contracts"
)

// Skills reach the host as resources: every file a skill's entry lists,
// under its own URI (pikod's namespaced form when two servers list it).
// Reading a SKILL.md loads the skill through pikod (extensions.mcp.skills,
// op load: size, digest and frontmatter checked before anything is
// returned); reading another file reads it through pikod (op read), which
// serves only files of a loaded, unchanged skill. A plain resource of the
// same URI is never exposed beside it, so a host cannot read a skill's
// files around the checks. What the host gets is tagged with the skill's
// server and framed as that server's data.

// skillEntry is what the bridge reads of a skills/list entry.
type skillEntry struct {
	URI         string `json:"uri"`
	Frontmatter struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"frontmatter"`
	Resources json.RawMessage `json:"resources"`
}

// skillFiles returns the entry's files (URI and size), or nil for one
// pikod would not load ("dynamic", or not a list).
func (e skillEntry) skillFiles() []struct {
	URI  string `json:"uri"`
	Size int64  `json:"size"`
} {
	var files []struct {
		URI  string `json:"uri"`
		Size int64  `json:"size"`
	}
	if e.URI == "" || json.Unmarshal(e.Resources, &files) != nil {
		return nil
	}
	return files
}

// skillsOf decodes a catalog's skill entries that have files.
func skillsOf(cat *contracts.CatalogResult) []skillEntry {
	var out []skillEntry
	for _, raw := range cat.Skills {
		var e skillEntry
		if json.Unmarshal(raw, &e) == nil && e.skillFiles() != nil {
			out = append(out, e)
		}
	}
	return out
}

// skillResources returns the resources of server's skills; uriCount says
// how many exposed servers list each URI.
func (b *Bridge) skillResources(id string, skills []skillEntry, uriCount map[string]int) []server.ServerResource {
	var out []server.ServerResource
	for _, e := range skills {
		name := contracts.SafeText(e.Frontmatter.Name, contracts.OneLine, 100)
		root := strings.TrimSuffix(e.URI, "/SKILL.md") + "/"
		for _, f := range e.skillFiles() {
			exposed := f.URI
			if uriCount[f.URI] > 1 {
				exposed = namespacedURI(id, f.URI)
			}
			r := mcp.Resource{URI: exposed, Name: strings.TrimPrefix(f.URI, root)}
			if f.Size >= 0 {
				size := f.Size
				r.Size = &size
			}
			if f.URI == e.URI {
				r.Name, r.MIMEType = name, "text/markdown"
				r.Description = fmt.Sprintf("skill %s of server %s: %s (reading it loads the skill through pikod, which verifies it first; the text is the server's)",
					name, id, contracts.SafeText(e.Frontmatter.Description, contracts.OneLine, 500))
			} else {
				r.Description = fmt.Sprintf("file %s of skill %s of server %s: read the skill's SKILL.md first; pikod verifies the file against the skill's entry",
					contracts.SafeText(r.Name, contracts.OneLine, 200), name, id)
			}
			out = append(out, server.ServerResource{Resource: r, Handler: b.readSkill(id, e.URI, f.URI)})
		}
	}
	return out
}

// readSkill loads skill (reading its SKILL.md) or reads one of its files.
func (b *Bridge) readSkill(server, skill, file string) func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		c, err := b.conn(ctx)
		if err != nil {
			return nil, err
		}
		var head, text, source string
		var truncated bool
		if file == skill {
			var res contracts.SkillLoadResult
			if err := c.Call(ctx, contracts.MethodMCPSkills, contracts.SkillsParams{Server: server, Op: contracts.SkillOpLoad, Skill: skill}, &res); err != nil {
				return nil, err
			}
			head = fmt.Sprintf("[pikod: skill %s of server %s, SKILL.md, verified (%s). %s]", res.Name, server, strings.Join(res.Verified, ", "), res.Evidence)
			text, source, truncated = res.Text, res.OriginalResultSourceID, res.Truncated
		} else {
			var res contracts.SkillReadResult
			if err := c.Call(ctx, contracts.MethodMCPSkills, contracts.SkillsParams{Server: server, Op: contracts.SkillOpRead, Skill: skill, File: file}, &res); err != nil {
				return nil, err
			}
			head = fmt.Sprintf("[pikod: file %s of skill %s of server %s, verified (%s). %s]", res.Path, skill, server, strings.Join(res.Verified, ", "), res.Evidence)
			text, source, truncated = res.Text, res.OriginalResultSourceID, res.Truncated
			if res.Binary {
				text = fmt.Sprintf("[binary, %d bytes, not shown: the whole read is %s%s]", res.Size, SourceURIPrefix, source)
			}
		}
		out := []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/markdown", Text: head + "\n\n" + text}}
		if truncated {
			out = append(out, mcp.TextResourceContents{URI: SourceURIPrefix + source, MIMEType: "text/plain",
				Text: "pikod: this file was cut short; read the whole result with resources/read " + SourceURIPrefix + source})
		}
		return out, nil
	}
}
