package pagoda

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// On a mesh in one process there is no rank 0 to follow: Follow fails as C does, and the
// engine serves on afterwards.
func TestFollowNeedsAMeshOverProcesses(t *testing.T) {
	s := newStack(t)
	err := s.engine.Follow()
	var perr *Error
	if !errors.As(err, &perr) || perr.Status != StatusInvalidArgument ||
		!strings.Contains(perr.Message, "one process") {
		t.Fatalf("Follow on a one-process mesh: %v", err)
	}
	stream, err := s.engine.StreamText(storyPrompt, greedy(4))
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := collect(t, stream); text == "" {
		t.Fatal("no text after Follow failed")
	}
	s.engine.Close()
	if err := s.engine.Follow(); !errors.Is(err, StatusInvalidHandle) {
		t.Fatalf("Follow on a closed engine: %v", err)
	}
}

// followerRendezvous names the variable that makes TestFollowerProcess rank 1 of the mesh
// TestFollowOverTwoProcesses builds.
const followerRendezvous = "PAGODA_GO_TEST_FOLLOWER_RENDEZVOUS"

// twoRankStack is the stack of newStack over a mesh of two processes, each bringing cpu:0.
func twoRankStack(t *testing.T, rank int32, rendezvous string) *stack {
	t.Helper()
	return newStackOn(t, &MeshOptions{Rank: rank, WorldSize: 2, Rendezvous: rendezvous, TimeoutMs: 20000})
}

// Rank 1 of TestFollowOverTwoProcesses, in a process of its own: it takes no request, follows
// rank 0's steps, and Follow returns nil once rank 0's engine is closed.
func TestFollowerProcess(t *testing.T) {
	rendezvous := os.Getenv(followerRendezvous)
	if rendezvous == "" {
		t.Skip("rank 1 of TestFollowOverTwoProcesses, which runs it")
	}
	s := twoRankStack(t, 1, rendezvous)
	if _, err := s.engine.SubmitText(storyPrompt, greedy(4)); !errors.Is(err, StatusUnsupported) {
		t.Errorf("a follower's submit: %v", err)
	}
	if err := s.engine.Follow(); err != nil {
		t.Fatal(err)
	}
}

// Rank 0 here, rank 1 in a second process (this test binary again): rank 0's greedy story over
// the two processes is the one-process story, and the follower's Follow ends cleanly when rank
// 0's engine closes.
func TestFollowOverTwoProcesses(t *testing.T) {
	if os.Getenv(followerRendezvous) != "" {
		t.Skip("in the follower's process")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a free port for rank 0 to listen on
	if err != nil {
		t.Fatal(err)
	}
	rendezvous := ln.Addr().String()
	ln.Close()
	follower := exec.Command(os.Args[0], "-test.run=^TestFollowerProcess$", "-test.count=1", "-test.v")
	follower.Env = append(os.Environ(), followerRendezvous+"="+rendezvous)
	var said bytes.Buffer
	follower.Stdout, follower.Stderr = &said, &said
	if err := follower.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	defer func() {
		if !waited { // a failure on this side: do not leave the follower behind
			follower.Process.Kill()
			follower.Wait()
		}
	}()

	alone := newStack(t)
	stream, err := alone.engine.StreamText(storyPrompt, greedy(24))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := collect(t, stream)

	s := twoRankStack(t, 0, rendezvous)
	if rank, size, err := s.mesh.World(); err != nil || rank != 0 || size != 2 {
		t.Fatalf("world (%d, %d) (%v), want (0, 2)", rank, size, err)
	}
	if err := s.engine.Follow(); !errors.Is(err, StatusInvalidArgument) {
		t.Fatalf("Follow on rank 0: %v", err)
	}
	stream, err = s.engine.StreamText(storyPrompt, greedy(24))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := collect(t, stream); got != want {
		t.Fatalf("over two processes: %q\n        in one: %q", got, want)
	}
	s.engine.Close() // tells the follower to stop
	err = follower.Wait()
	waited = true
	if err != nil || !strings.Contains(said.String(), "--- PASS: TestFollowerProcess") {
		t.Fatalf("the follower (%v) said:\n%s", err, said.String())
	}
}
