package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pikod/pikod/contracts"
)

// checkEverythingOffer reads every resource server-everything lists (and
// compares it with the file it serves), expands every template with a
// value its completion suggests and reads the result (text and binary),
// gets every prompt with arguments chosen through completion where the
// server completes them, and checks that a missing required argument is
// refused before anything is sent.
func checkEverythingOffer(t *testing.T, d *daemon, c interopCase, cat contracts.CatalogResult) {
	t.Helper()
	srv := c.id

	var list contracts.ResourceListResult
	d.callInto(t, contracts.MethodMCPResource, contracts.ResourceParams{Server: srv, Op: contracts.ResourceOpList}, &list)
	if len(list.Resources) != len(cat.Resources) || !list.Complete {
		t.Errorf("resource list: %d resources (complete %v), the catalog has %d", len(list.Resources), list.Complete, len(cat.Resources))
	}
	for _, raw := range list.Resources {
		var r struct{ URI, Name, MimeType string }
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Errorf("resource %s: %v", raw, err)
			continue
		}
		want, err := os.ReadFile(filepath.Join(c.docsDir, r.Name))
		if err != nil {
			t.Errorf("resource %s: the file it serves: %v", r.URI, err)
			continue
		}
		res := readResource(t, d, srv, r.URI)
		var got struct {
			Contents []struct{ URI, MimeType, Text string }
		}
		if err := json.Unmarshal([]byte(readSourceText(t, d, res.OriginalResultSourceID)), &got); err != nil ||
			len(got.Contents) != 1 || got.Contents[0].Text != string(want) || got.Contents[0].MimeType != r.MimeType {
			t.Errorf("read %s: the retained result does not hold %s as %s (%v)", r.URI, r.Name, r.MimeType, err)
		}
		preview := contentsOf(t, res)
		if len(want) <= 24_000 && (res.Truncated || len(preview) != 1 || preview[0].Text != string(want)) {
			t.Errorf("read %s: the preview (truncated %v) is not the whole text of %s", r.URI, res.Truncated, r.Name)
		}
	}

	var templates contracts.ResourceListResult
	d.callInto(t, contracts.MethodMCPResource, contracts.ResourceParams{Server: srv, Op: contracts.ResourceOpTemplates}, &templates)
	if len(templates.ResourceTemplates) != len(cat.ResourceTemplates) || len(templates.ResourceTemplates) == 0 {
		t.Errorf("template list: %d templates, the catalog has %d", len(templates.ResourceTemplates), len(cat.ResourceTemplates))
	}
	varRE := regexp.MustCompile(`\{([A-Za-z0-9_]+)\}`)
	binary := 0
	for _, raw := range templates.ResourceTemplates {
		var tmpl struct{ URITemplate string }
		_ = json.Unmarshal(raw, &tmpl)
		vars := varRE.FindAllStringSubmatch(tmpl.URITemplate, -1)
		if len(vars) != 1 {
			t.Errorf("template %q: want one variable to expand", tmpl.URITemplate)
			continue
		}
		var comp contracts.CompleteResult
		d.callInto(t, contracts.MethodMCPComplete, contracts.CompleteParams{Server: srv, Template: tmpl.URITemplate,
			Argument: vars[0][1], Value: "7"}, &comp)
		if !slices.Equal(comp.Values, []string{"7"}) {
			t.Errorf("completing %s of %q with 7: %+v, want [7]", vars[0][1], tmpl.URITemplate, comp)
			continue
		}
		uri := strings.Replace(tmpl.URITemplate, vars[0][0], comp.Values[0], 1)
		res := readResource(t, d, srv, uri)
		contents := contentsOf(t, res)
		if len(contents) != 1 {
			t.Errorf("read %s: %d contents, want 1", uri, len(contents))
			continue
		}
		switch x := contents[0]; {
		case x.BlobBytes != nil:
			binary++
			// A binary resource: its type and size only; the bytes from
			// source.read.
			b := blobOf(t, d, res.OriginalResultSourceID, uri)
			if !res.Truncated || x.MimeType != "text/plain" || *x.BlobBytes != int64(len(b)) ||
				!strings.HasPrefix(string(b), "Resource 7: This is a base64 blob") || strings.Contains(string(res.Contents), "blob\"") {
				t.Errorf("binary %s: preview %s; the retained bytes %q", uri, res.Contents, b)
			}
		default:
			if !strings.HasPrefix(x.Text, "Resource 7: This is a plaintext resource") || x.URI != uri {
				t.Errorf("text %s: %+v", uri, x)
			}
		}
	}
	if binary == 0 {
		t.Errorf("no template gave binary contents")
	}

	// Prompts: arguments through completion where the server completes
	// them, else a fixed value.
	fallback := map[string]string{"city": "Paris", "state": "Texas", "resourceId": "3"}
	wantText := map[string]string{
		"simple-prompt":      "This is a simple prompt without arguments.",
		"args-prompt":        "What's weather in Paris, Texas?",
		"completable-prompt": "Please promote Alice to the head of the Engineering team.",
		"resource-prompt":    "This prompt includes the Text resource with id: 3.",
	}
	var prompts contracts.PromptListResult
	d.callInto(t, contracts.MethodMCPPrompt, contracts.PromptParams{Server: srv}, &prompts)
	if len(prompts.Prompts) != len(cat.Prompts) {
		t.Errorf("prompt list: %d prompts, the catalog has %d", len(prompts.Prompts), len(cat.Prompts))
	}
	for _, raw := range prompts.Prompts {
		var p struct {
			Name      string
			Arguments []struct {
				Name     string
				Required bool
			}
		}
		_ = json.Unmarshal(raw, &p)
		args := map[string]string{}
		for _, a := range p.Arguments {
			var comp contracts.CompleteResult
			d.callInto(t, contracts.MethodMCPComplete, contracts.CompleteParams{Server: srv, Prompt: p.Name, Argument: a.Name, Arguments: args}, &comp)
			if len(comp.Values) > 0 {
				args[a.Name] = comp.Values[0]
			} else {
				args[a.Name] = fallback[a.Name]
			}
			if a.Required {
				// Left out, it is refused, and named.
				rest := map[string]string{}
				for k, v := range args {
					if k != a.Name {
						rest[k] = v
					}
				}
				we := d.callErr(t, contracts.MethodMCPPrompt, contracts.PromptParams{Server: srv, Op: contracts.PromptOpGet, Name: p.Name,
					Arguments: mustJSON(t, rest)})
				if we.Reason() != "invalid_prompt_arguments" || !strings.Contains(we.Message, a.Name) {
					t.Errorf("%s without %s: %v, want invalid_prompt_arguments naming it", p.Name, a.Name, we)
				}
			}
		}
		var res contracts.PromptGetResult
		d.callInto(t, contracts.MethodMCPPrompt, contracts.PromptParams{Server: srv, Op: contracts.PromptOpGet, Name: p.Name,
			Arguments: mustJSON(t, args)}, &res)
		var msgs []struct {
			Role    string
			Content struct {
				Type, Text string
				Resource   struct{ URI string }
			}
		}
		if err := json.Unmarshal(res.Messages, &msgs); err != nil || len(msgs) == 0 || res.Evidence == "" {
			t.Errorf("prompt %s with %v: %s (%v)", p.Name, args, res.Messages, err)
			continue
		}
		if want, ok := wantText[p.Name]; !ok || !strings.HasPrefix(msgs[0].Content.Text, want) || msgs[0].Role != "user" {
			t.Errorf("prompt %s with %v: first message %+v, want %q", p.Name, args, msgs[0], want)
		}
		if p.Name == "resource-prompt" && (len(msgs) != 2 || msgs[1].Content.Type != "resource" ||
			msgs[1].Content.Resource.URI != "demo://resource/dynamic/text/3") {
			t.Errorf("resource-prompt: %s, want the embedded text resource 3", res.Messages)
		}
	}

	// Completion: a prompt argument, narrowed by the context, and a
	// template argument.
	var comp contracts.CompleteResult
	d.callInto(t, contracts.MethodMCPComplete, contracts.CompleteParams{Server: srv, Prompt: "completable-prompt", Argument: "department", Value: "S"}, &comp)
	if !slices.Equal(comp.Values, []string{"Sales", "Support"}) {
		t.Errorf("department S: %q", comp.Values)
	}
	d.callInto(t, contracts.MethodMCPComplete, contracts.CompleteParams{Server: srv, Prompt: "completable-prompt", Argument: "name",
		Arguments: map[string]string{"department": "Marketing"}}, &comp)
	if !slices.Equal(comp.Values, []string{"Grace", "Henry", "Iris"}) {
		t.Errorf("name in Marketing: %q", comp.Values)
	}
	d.callInto(t, contracts.MethodMCPComplete, contracts.CompleteParams{Server: srv, Template: "demo://resource/dynamic/blob/{resourceId}",
		Argument: "resourceId", Value: "x"}, &comp)
	if len(comp.Values) != 0 {
		t.Errorf("resourceId x: %q, want none", comp.Values)
	}
}
