package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// browse is the owner's browser: it opens the authorization URL pikod
// printed without following the redirect, then requests the Location the
// authorization server sent it to (pikod's loopback callback), as a
// browser would. It is two GETs, nothing more: no discovery, no tokens.
func browse(ctx context.Context, log *logger, authURL string) error {
	client := &http.Client{
		Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	u, err := url.Parse(authURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("pikod printed an authorization URL a browser would not open: %q", redactURL(authURL))
	}
	log.printf("browser: GET %s", redactURL(authURL))
	resp, err := get(ctx, client, authURL)
	if err != nil {
		return err
	}
	loc := resp.Header.Get("Location")
	log.printf("browser: %s, Location %s", resp.Status, redactURL(loc))
	if resp.StatusCode < 300 || resp.StatusCode > 399 || loc == "" {
		return fmt.Errorf("the authorization endpoint answered %s without a redirect: %s", resp.Status, snippet(resp.body))
	}
	next, err := u.Parse(loc)
	if err != nil {
		return fmt.Errorf("the authorization endpoint redirected to an unparsable Location: %w", err)
	}
	log.printf("browser: GET %s", redactURL(next.String()))
	resp, err = get(ctx, client, next.String())
	if err != nil {
		return err
	}
	log.printf("browser: callback answered %s: %s", resp.Status, snippet(resp.body))
	return nil
}

type response struct {
	*http.Response
	body []byte
}

func get(ctx context.Context, client *http.Client, target string) (*response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/html,text/plain;q=0.9,*/*;q=0.8")
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("browser: GET %s: %w", redactURL(target), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return &response{Response: resp, body: body}, nil
}

// shownQuery are the query parameters the log shows; every other value is
// hidden (state, codes, PKCE values).
var shownQuery = map[string]bool{
	"response_type": true, "client_id": true, "redirect_uri": true, "scope": true,
	"resource": true, "code_challenge_method": true, "error": true, "error_description": true,
}

// redactURL hides the values of query parameters that are one-time
// credentials (state, code, code_challenge) so the log holds none.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery == "" {
		return raw
	}
	var parts []string
	for _, kv := range strings.Split(u.RawQuery, "&") {
		k, _, _ := strings.Cut(kv, "=")
		name, _ := url.QueryUnescape(k)
		if shownQuery[name] {
			parts = append(parts, kv)
		} else {
			parts = append(parts, k+"=(hidden)")
		}
	}
	u.RawQuery = strings.Join(parts, "&")
	return u.String()
}

var controls = regexp.MustCompile(`[\x00-\x1f\x7f]+`)

func snippet(b []byte) string {
	s := controls.ReplaceAllString(string(b), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strings.TrimSpace(s)
}
