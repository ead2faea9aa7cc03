package tests

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestScripts runs the CLI scenarios in testdata/script: each .txtar file
// is a sequence of pikoctl commands and the output the owner sees, against
// a real pikod of its own. Beside testscript's builtins a script has:
//
//	pikod start|stop     start this script's daemon and wait until it
//	                     answers; stop it with SIGINT (it must exit 0)
//	pikoctl ARGS [<FILE] run the built pikoctl in a session of its own (no
//	                     terminal), FILE as its stdin; its stdout and
//	                     stderr are what stdout and stderr match next
//	exitcode N           the last pikoctl ended with exit code N
//
// mcpfixture is on PATH, so settings name it by its bare name. $SOCKET
// and $STATE are the daemon's socket and state directory; pikoctl finds
// them through PIKO_SOCKET and PIKO_STATE_DIR. $TOKEN is a random
// credential made for the run, and $WORK/secret.json holds it as
// {"env": {"API_TOKEN": $TOKEN}}.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup:               setupScript,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"pikod":    cmdPikod,
			"pikoctl":  cmdPikoctl,
			"exitcode": cmdExitcode,
		},
	})
}

// scriptState is what one script's custom commands share.
type scriptState struct {
	env     []string
	daemon  *exec.Cmd
	done    chan struct{}
	stderr  bytes.Buffer
	lastCtl int
}

const scriptStateKey = "pikod"

// setupScript gives the script a private HOME, a short socket path (a
// Unix socket's path must stay under 108 bytes; $WORK may not) and the
// environment every pikod and pikoctl of the script runs with.
func setupScript(e *testscript.Env) error {
	sockDir, err := os.MkdirTemp("", "pk")
	if err != nil {
		return err
	}
	e.Defer(func() { os.RemoveAll(sockDir) })
	home := filepath.Join(e.WorkDir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		return err
	}
	socket, state := filepath.Join(sockDir, "pikod.sock"), filepath.Join(e.WorkDir, "state")
	e.Setenv("SOCKET", socket)
	e.Setenv("STATE", state)
	// A credential made for this run only: no fixture on disk holds one.
	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return err
	}
	e.Setenv("TOKEN", "tok-"+hex.EncodeToString(token))
	creds, err := json.Marshal(map[string]any{"env": map[string]string{"API_TOKEN": e.Getenv("TOKEN")}})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(e.WorkDir, "secret.json"), creds, 0o600); err != nil {
		return err
	}
	env := minimalEnv(home)
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + binDir + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		}
	}
	st := &scriptState{env: append(env, "PIKO_SOCKET="+socket, "PIKO_STATE_DIR="+state)}
	e.Values[scriptStateKey] = st
	e.Defer(st.kill)
	return nil
}

func stateOf(ts *testscript.TestScript) *scriptState {
	return ts.Value(scriptStateKey).(*scriptState)
}

// kill ends a daemon the script left running, by its pid.
func (st *scriptState) kill() {
	if st.daemon == nil {
		return
	}
	select {
	case <-st.done:
	default:
		_ = st.daemon.Process.Kill()
		<-st.done
	}
}

func cmdPikod(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: pikod start|stop")
	}
	st := stateOf(ts)
	switch args[0] {
	case "start":
		if st.daemon != nil {
			select {
			case <-st.done:
			default:
				ts.Fatalf("pikod is already running (pid %d)", st.daemon.Process.Pid)
			}
		}
		cmd := exec.Command(pikodBin)
		cmd.Env = st.env
		cmd.Stderr = &st.stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		ts.Check(cmd.Start())
		st.daemon, st.done = cmd, make(chan struct{})
		go func(done chan struct{}) {
			_ = cmd.Wait()
			close(done)
		}(st.done)
		socket := ts.Getenv("SOCKET")
		for deadline := time.Now().Add(readyTimeout); ; time.Sleep(20 * time.Millisecond) {
			hello, err := rawHello(socket, time.Second)
			if err == nil && hello.PID == cmd.Process.Pid {
				return
			}
			select {
			case <-st.done:
				ts.Fatalf("pikod exited with code %d before it answered; stderr:\n%s", cmd.ProcessState.ExitCode(), st.stderr.String())
			default:
			}
			if time.Now().After(deadline) {
				ts.Fatalf("pikod did not answer on %s within %v (last: %v)", socket, readyTimeout, err)
			}
		}
	case "stop":
		if st.daemon == nil {
			ts.Fatalf("pikod was not started")
		}
		ts.Check(st.daemon.Process.Signal(syscall.SIGINT))
		select {
		case <-st.done:
		case <-time.After(stopTimeout):
			ts.Fatalf("pikod did not stop within %v of SIGINT", stopTimeout)
		}
		if code := st.daemon.ProcessState.ExitCode(); code != 0 {
			ts.Fatalf("pikod exited with code %d after SIGINT; stderr:\n%s", code, st.stderr.String())
		}
		if strings.Contains(st.stderr.String(), "WARNING: DATA RACE") {
			ts.Fatalf("pikod reported a data race:\n%s", st.stderr.String())
		}
	default:
		ts.Fatalf("usage: pikod start|stop")
	}
}

func cmdPikoctl(ts *testscript.TestScript, neg bool, args []string) {
	st := stateOf(ts)
	var stdin []byte
	if n := len(args); n > 0 && strings.HasPrefix(args[n-1], "<") {
		stdin = []byte(ts.ReadFile(strings.TrimPrefix(args[n-1], "<")))
		args = args[:n-1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, pikoctlBin, args...)
	cmd.Env = st.env
	cmd.Dir = ts.MkAbs(".")
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout = ts.Stdout()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	detach(cmd)
	err := cmd.Run()
	fmt.Fprint(ts.Stderr(), errb.String())
	if ctx.Err() != nil {
		ts.Fatalf("pikoctl %s did not finish within a minute", strings.Join(args, " "))
	}
	if strings.Contains(errb.String(), "WARNING: DATA RACE") {
		ts.Fatalf("pikoctl reported a data race")
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		ts.Fatalf("running pikoctl: %v", err)
	}
	st.lastCtl = cmd.ProcessState.ExitCode()
	switch {
	case neg && st.lastCtl == 0:
		ts.Fatalf("pikoctl succeeded, want a failure")
	case !neg && st.lastCtl != 0:
		ts.Fatalf("pikoctl exited with code %d", st.lastCtl)
	}
}

func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: exitcode N")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	if got := stateOf(ts).lastCtl; got != want {
		ts.Fatalf("the last pikoctl exited with code %d, want %d", got, want)
	}
}
