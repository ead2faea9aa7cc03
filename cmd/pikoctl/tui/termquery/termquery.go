// Package termquery keeps Bubble Tea from querying the terminal while
// pikoctl starts, so that linking the console costs the other pikoctl
// commands nothing.
//
// Why it exists: github.com/charmbracelet/bubbletea (v1.3.10) calls
// lipgloss.HasDarkBackground() in an init function (tea_init.go). On a
// terminal that asks termenv to put the terminal in raw mode, write an
// OSC 11 background query and a cursor-position request, and read the
// answers, waiting up to 5 seconds for a terminal that does not answer;
// before main runs, in every pikoctl command, whatever it does. The
// queries land in the output of commands run on a pseudo-terminal, and
// the read consumes what the person typed ahead.
//
// Why a module of its own with this path (as a.pikod.internal/busenv):
// since Go 1.21 packages are initialized in import-path order, each step
// taking the first package whose imports are all initialized.
// "a.pikod.internal/termquery" sorts before every "github.com/..." path
// and imports only lipgloss, so it is initialized right after lipgloss and
// before bubbletea. It fixes the default renderer's background to dark,
// which makes HasDarkBackground answer without asking the terminal. The
// console does not use adaptive colours, so nothing depends on the
// answer. ".internal" is reserved for private use: the path can never be
// fetched.
package termquery

import "github.com/charmbracelet/lipgloss"

func init() { lipgloss.SetHasDarkBackground(true) }
