package mcpclient

import (
	"slices"
	"testing"
)

func TestURITemplateMatches(t *testing.T) {
	tests := []struct {
		template string
		vars     []string
		match    []string
		noMatch  []string
	}{{
		template: "demo://resource/dynamic/text/{resourceId}",
		vars:     []string{"resourceId"},
		match:    []string{"demo://resource/dynamic/text/1", "demo://resource/dynamic/text/abc%20d", "demo://resource/dynamic/text/"},
		noMatch:  []string{"demo://resource/dynamic/text/1/2", "demo://resource/dynamic/blob/1", "demo://resource/dynamic/text/1?x", "xdemo://resource/dynamic/text/1"},
	}, {
		template: "file:///{+path}",
		vars:     []string{"path"},
		match:    []string{"file:///etc/hosts", "file:///a/b?c#d"},
		noMatch:  []string{"file://host/etc", "http:///etc"},
	}, {
		template: "repo://{owner}/{repo}/issues{?state,labels}",
		vars:     []string{"owner", "repo", "state", "labels"},
		match:    []string{"repo://a/b/issues", "repo://a/b/issues?state=open&labels=x,y"},
		noMatch:  []string{"repo://a/b/c/issues", "repo://a/b/pulls"},
	}, {
		template: "x://{a}{/path*}{.ext}{;p}{#frag}",
		vars:     []string{"a", "path", "ext", "p", "frag"},
		match:    []string{"x://h/one/two.txt;p=1#top", "x://h"},
	}, {
		template: "lit://a.b+c(d)[e]",
		match:    []string{"lit://a.b+c(d)[e]"},
		noMatch:  []string{"lit://aXb+c(d)[e]", "lit://a.bbc(d)[e]"},
	}, {
		template: "t://{x:3}/{x}",
		vars:     []string{"x"},
		match:    []string{"t://abc/abcdef"},
	}}
	for _, tc := range tests {
		tmpl, err := parseURITemplate(tc.template)
		if err != nil {
			t.Errorf("parseURITemplate(%q): %v", tc.template, err)
			continue
		}
		if !slices.Equal(tmpl.vars, tc.vars) {
			t.Errorf("%q: vars %q, want %q", tc.template, tmpl.vars, tc.vars)
		}
		for _, u := range tc.match {
			if !tmpl.matches(u) {
				t.Errorf("%q does not match %q, want a match", tc.template, u)
			}
		}
		for _, u := range tc.noMatch {
			if tmpl.matches(u) {
				t.Errorf("%q matches %q, want none", tc.template, u)
			}
		}
	}
}

func TestURITemplateRejects(t *testing.T) {
	for _, s := range []string{"a://{", "a://{}", "a://}", "a://{x}}", "a://{x y}", "a://{x-y}", "a://{.}", string(make([]byte, maxTemplateLen+1))} {
		if _, err := parseURITemplate(s); err == nil {
			t.Errorf("parseURITemplate(%.40q) succeeded, want an error", s)
		}
	}
}
