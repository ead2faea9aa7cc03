package contracts

// Search limits.
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 100
	MaxSearchQuery     = 1000
)

// SearchParams is the params of extensions.mcp.search: rank the tools of
// every connected server against Query with BM25. Nothing is connected for
// a search: servers that are not connected are named in NotSearched.
// Limit is 1..MaxSearchLimit, default DefaultSearchLimit. Server, when
// set, searches that one server only.
type SearchParams struct {
	Query  string `json:"query"`
	Limit  int    `json:"limit,omitempty"`
	Server string `json:"server,omitempty"`
}

// SearchResult is the result of extensions.mcp.search: the best matches,
// highest score first (ties by server, then tool name). A tool matches when
// at least one query term occurs in its name, title, description or the
// names of its input parameters.
type SearchResult struct {
	Query   string      `json:"query"`
	Results []SearchHit `json:"results"`
	// Searched names the connected servers whose tools were ranked.
	Searched []string `json:"searched"`
	// NotSearched names the configured servers that are not connected
	// (their tools are unknown until 'connect').
	NotSearched []string `json:"notSearched"`
}

// SearchHit is one ranked tool.
type SearchHit struct {
	Server string `json:"server"`
	// Tool is the tool's original name on its server; Name is the
	// model-facing mcp_<server>_<tool>.
	Tool        string `json:"tool"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// Grant is read, autonomous, approval or not_selected, as in the
	// catalog.
	Grant string `json:"grant"`
	// Score is the BM25 score, rounded to 3 decimals; only its order means
	// anything.
	Score float64 `json:"score"`
}
