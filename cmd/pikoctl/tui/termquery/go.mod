module a.pikod.internal/termquery

go 1.26

require github.com/charmbracelet/lipgloss v1.1.0
