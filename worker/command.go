package worker

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/baton-sqs/baton/consumer"
)

// ProgressFD is the file descriptor on which a command reports progress,
// one line per sign of life; BATON_PROGRESS_FD names it in the command's
// environment.
const ProgressFD = 3

// CommandTarget delivers to a local command, run with /bin/sh -c in a
// process group of its own: the event on its standard input, its answer
// on standard output (read with ReportBatchItemFailures), exit status 0 for
// success. Its standard error goes to Stderr.
//
// Each line it writes to file descriptor 3 (`echo . >&3` in a shell) is
// progress. With StallTimeout set, a command that writes no such line for
// that long is stalled; a stalled command, or one running past the
// target timeout, or one the worker must stop (shutdown) is sent SIGTERM —
// its whole process group — and SIGKILL KillGrace later.
//
// A command's work ends when it exits: whatever it left running in its
// process group then gets SIGKILL. A command must not daemonize (setsid,
// or a process group of its own): such a process is neither waited for,
// stopped nor, when the worker is PID 1, reaped, and if it keeps the
// command's standard output or descriptor 3 open the delivery waits
// KillGrace for it.
type CommandTarget struct {
	// Command is the shell command line. Required.
	Command string
	// Dir is its working directory (default: the worker's).
	Dir string
	// Env is added to the worker's environment for the command.
	Env []string
	// StallTimeout, if positive, is how long the command may go without a
	// progress line on file descriptor 3 (default 0: only the target
	// timeout bounds it).
	StallTimeout time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL (default 5 s).
	KillGrace time.Duration
	// Stderr receives the command's standard error (default os.Stderr).
	// It must be safe for concurrent use when deliveries run at once.
	Stderr io.Writer
}

// String describes the target.
func (t *CommandTarget) String() string { return "command: " + t.Command }

func (t *CommandTarget) check() error {
	switch {
	case t.Command == "":
		return errors.New("worker: command target: no command")
	case t.StallTimeout < 0:
		return fmt.Errorf("worker: command target: stall timeout %v: must not be negative", t.StallTimeout)
	case t.KillGrace < 0:
		return fmt.Errorf("worker: command target: kill grace %v: must not be negative", t.KillGrace)
	}
	return checkCommandSupport()
}

func (t *CommandTarget) grace() time.Duration {
	if t.KillGrace == 0 {
		return DefaultKillGrace
	}
	return t.KillGrace
}

// stopTime bounds how long a run takes to end once its command is to be
// stopped: KillGrace from SIGTERM to SIGKILL, KillGrace again for its
// output to close, and a second to spare.
func (t *CommandTarget) stopTime() time.Duration {
	return 2*t.grace() + time.Second
}

// deliver runs the command on a batch's event.
func (t *CommandTarget) deliver(ctx context.Context, d *delivery) outcome {
	w := d.w
	r, err := t.run(ctx, d)
	switch {
	case err != nil:
		return outcome{err: err}
	case r.stopped != nil:
		return outcome{err: r.stopped}
	case r.exitErr != nil:
		return outcome{err: fmt.Errorf("%w: %v%s", ErrTargetFailed, r.exitErr, snippet(r.stdout))}
	case !w.cfg.ReportBatchItemFailures:
		w.noteIgnoredFailures(r.stdout, d.inBatch)
		return outcome{}
	case r.tooLarge:
		return outcome{err: fmt.Errorf("%w: the standard output is larger than %d bytes", ErrBadResponse, maxResponse)}
	}
	ids, err := ParseBatchItemFailures(r.stdout, d.inBatch)
	if err != nil {
		return outcome{err: err}
	}
	return outcome{failed: ids}
}

// runResult is how a command's run ended.
type runResult struct {
	// stopped is why the worker stopped it (stalled, timed out,
	// shutdown), or nil if it exited by itself.
	stopped error
	// exitErr is cmd.Wait's error when it exited by itself.
	exitErr  error
	stdout   []byte
	tooLarge bool
}

// pipes are the parent's ends of the command's standard streams and of its
// progress descriptor, and the child's ends until it has started.
type pipes struct {
	stdinW, stdoutR, stderrR, progR *os.File
	child                           []*os.File
	closeStdin                      sync.Once
}

func openPipes() (*pipes, error) {
	p := &pipes{}
	var ends [8]*os.File
	for i := 0; i < 4; i++ {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range ends[:2*i] {
				f.Close()
			}
			return nil, fmt.Errorf("worker: pipe for the command: %w", err)
		}
		ends[2*i], ends[2*i+1] = r, w
	}
	// stdin: the child reads; the others: the child writes.
	p.stdinW, p.stdoutR, p.stderrR, p.progR = ends[1], ends[2], ends[4], ends[6]
	p.child = []*os.File{ends[0], ends[3], ends[5], ends[7]}
	return p, nil
}

func (p *pipes) closeChild() {
	for _, f := range p.child {
		f.Close()
	}
}

func (p *pipes) closeParent() {
	p.closeStdin.Do(func() { p.stdinW.Close() })
	p.stdoutR.Close()
	p.stderrR.Close()
	p.progR.Close()
}

// run starts the command, feeds it the event, watches its progress and its
// time, stops it when it must, kills what it left in its process group,
// and collects its output. Every wait is bounded: the command by the
// target timeout (and the stall timeout), the stop by KillGrace, the
// output after exit by KillGrace again.
func (t *CommandTarget) run(ctx context.Context, d *delivery) (runResult, error) {
	w := d.w
	p, err := openPipes()
	if err != nil {
		return runResult{}, err
	}
	cmd, reaped, err := t.start(w, p)
	if err != nil {
		return runResult{}, err
	}
	pid := cmd.Process.Pid
	s := t.stream(d, p)
	exited := w.awaitExit(cmd, reaped)

	var res runResult
	waitErr, stopped := t.watch(ctx, w, pid, exited, s.lines)
	res.stopped = stopped
	if stopped == nil {
		res.exitErr = waitErr
	}

	// The command has exited. Whatever it left in its process group goes
	// too, and is reaped if it became the worker's (PID 1).
	w.killLeftovers(pid)
	go w.reapGroup(pid)
	t.drain(w, pid, p, s)
	res.stdout, res.tooLarge = s.stdout.Bytes(), s.stdout.over
	return res, nil
}

// start starts the command on the child's ends of p, in a process group
// of its own, and enters it in w.procs; reaped is its entry there, to be
// closed once cmd.Wait has reaped it. The child's ends are closed either
// way, the parent's too if it fails: with consumer.ErrShutdown once the
// worker has stopped, with ErrTargetFailed if the command cannot start.
func (t *CommandTarget) start(w *Worker, p *pipes) (cmd *exec.Cmd, reaped chan struct{}, err error) {
	cmd = exec.Command("/bin/sh", "-c", t.Command)
	cmd.Dir = t.Dir
	cmd.Env = append(append(os.Environ(), t.Env...), fmt.Sprintf("BATON_PROGRESS_FD=%d", ProgressFD))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.child[0], p.child[1], p.child[2]
	cmd.ExtraFiles = []*os.File{p.child[3]} // descriptor 3
	ownProcessGroup(cmd)
	// Started and entered in w.procs in one step under procsMu: reapGroup
	// must never see a command's process unregistered.
	w.procsMu.Lock()
	if w.procsClosed {
		w.procsMu.Unlock()
		p.closeChild()
		p.closeParent()
		return nil, nil, fmt.Errorf("%w: the worker has stopped: the command was not started", consumer.ErrShutdown)
	}
	if err := cmd.Start(); err != nil {
		w.procsMu.Unlock()
		p.closeChild()
		p.closeParent()
		return nil, nil, fmt.Errorf("%w: start %q: %v", ErrTargetFailed, t.Command, err)
	}
	reaped = make(chan struct{})
	w.procs[cmd.Process.Pid] = reaped
	w.procsMu.Unlock()
	p.closeChild()
	return cmd, reaped, nil
}

// streams is what a running command's four streams are read into.
type streams struct {
	// done is done when all four have ended.
	done sync.WaitGroup
	// stdout keeps the first maxResponse bytes of its standard output.
	stdout limitedBuffer
	// lines has a value after each progress line not yet taken.
	lines chan struct{}
}

// stream feeds the event to the command's standard input and closes it,
// copies its standard error to Stderr a line at a time, keeps its standard
// output, and reports each progress line to d.progress and on lines, each
// until its stream ends.
func (t *CommandTarget) stream(d *delivery, p *pipes) *streams {
	s := &streams{lines: make(chan struct{}, 1)}
	s.stdout.limit = maxResponse
	s.done.Add(4)
	go func() {
		defer s.done.Done()
		p.stdinW.Write(d.event) // an error means the command stopped reading
		p.closeStdin.Do(func() { p.stdinW.Close() })
	}()
	go func() {
		defer s.done.Done()
		_, _ = s.stdout.ReadFrom(p.stdoutR)
	}()
	stderr := t.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	go func() {
		defer s.done.Done()
		_, _ = copyLines(stderr, p.stderrR)
	}()
	go func() {
		defer s.done.Done()
		readLines(p.progR, func() {
			if d.progress != nil {
				d.progress()
			}
			select {
			case s.lines <- struct{}{}:
			default:
			}
		})
	}()
	return s
}

// awaitExit waits in the background for the command started with reaped
// as its entry in w.procs to exit, takes that entry out, closes reaped,
// and then sends cmd.Wait's error on the channel it returns.
func (w *Worker) awaitExit(cmd *exec.Cmd, reaped chan struct{}) <-chan error {
	pid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		w.procsMu.Lock()
		if w.procs[pid] == reaped {
			delete(w.procs, pid)
		}
		w.procsMu.Unlock()
		close(reaped)
		exited <- err
	}()
	return exited
}

// drain waits, once the command pid has exited, for its output to be read
// to the end, unless a process it left outside its group keeps a
// descriptor open past the grace: then it closes the parent's ends itself.
// It returns with every stream ended and the parent's ends closed.
func (t *CommandTarget) drain(w *Worker, pid int, p *pipes, s *streams) {
	p.closeStdin.Do(func() { p.stdinW.Close() })
	ioDone := make(chan struct{})
	go func() {
		s.done.Wait()
		close(ioDone)
	}()
	gt := w.clock.NewTimer(t.grace())
	select {
	case <-ioDone:
	case <-gt.C():
		w.log.Warn("command output still open after it exited: closing it", "pid", pid)
		p.closeParent()
		<-ioDone
	}
	gt.Stop()
	p.closeParent()
}

// watch waits for the command to exit, stopping it if it stalls, runs past
// the target timeout or ctx ends. It returns cmd.Wait's error and, if the
// worker stopped the command, why.
func (t *CommandTarget) watch(ctx context.Context, w *Worker, pid int, exited <-chan error, lines <-chan struct{}) (error, error) {
	timeout := w.clock.NewTimer(w.cfg.TargetTimeout)
	defer timeout.Stop()
	var stall <-chan time.Time
	var stallTimer interface{ Stop() bool }
	arm := func() {
		if t.StallTimeout <= 0 {
			return
		}
		if stallTimer != nil {
			stallTimer.Stop()
		}
		st := w.clock.NewTimer(t.StallTimeout)
		stallTimer, stall = st, st.C()
	}
	arm()
	defer func() {
		if stallTimer != nil {
			stallTimer.Stop()
		}
	}()
	var why error
	for why == nil {
		select {
		case err := <-exited:
			return err, nil
		case <-lines:
			arm()
		case <-stall:
			why = fmt.Errorf("%w for %v", ErrStalled, t.StallTimeout)
		case <-timeout.C():
			why = fmt.Errorf("%w after %v", ErrTargetTimeout, w.cfg.TargetTimeout)
		case <-ctx.Done():
			why = context.Cause(ctx)
		}
	}
	w.log.Warn("stopping the command: SIGTERM to its process group", "pid", pid, "why", why)
	signalGroup(pid, sigTerm)
	grace := w.clock.NewTimer(t.grace())
	defer grace.Stop()
	var err error
	select {
	case err = <-exited:
	case <-grace.C():
		w.log.Warn("the command outlived its grace: SIGKILL to its process group", "pid", pid, "grace", t.grace())
		signalGroup(pid, sigKill)
		err = <-exited
	case <-w.hardKill:
		w.log.Warn("the shutdown deadline is near: SIGKILL to the command's process group before its grace ends", "pid", pid)
		signalGroup(pid, sigKill)
		err = <-exited
	}
	return err, why
}

// killLeftovers sends SIGKILL to the process group of pid, a command
// cmd.Wait has reaped, unless pid is a command again (a new one with the
// same number, which can only be once the group is empty).
func (w *Worker) killLeftovers(pid int) {
	w.procsMu.Lock()
	defer w.procsMu.Unlock()
	if _, ok := w.procs[pid]; !ok {
		signalGroup(pid, sigKill)
	}
}

// limitedBuffer keeps the first limit bytes written and notes whether
// there were more; it reads its source to the end either way.
type limitedBuffer struct {
	bytes.Buffer
	limit int
	over  bool
}

// ReadFrom reads r to its end.
func (b *limitedBuffer) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	chunk := make([]byte, 32<<10)
	for {
		n, err := r.Read(chunk)
		total += int64(n)
		if room := b.limit - b.Len(); n > 0 && room > 0 {
			b.Write(chunk[:min(n, room)])
		}
		if n > 0 && b.Len() >= b.limit && total > int64(b.limit) {
			b.over = true
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return total, nil
			}
			return total, err
		}
	}
}

// readLines calls line for each newline-terminated line of r, however
// long, until r ends.
func readLines(r io.Reader, line func()) {
	br := bufio.NewReaderSize(r, 4096)
	for {
		b, err := br.ReadSlice('\n')
		if len(b) > 0 && b[len(b)-1] == '\n' {
			line()
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// copyLines copies r to w a line at a time (so that several commands'
// lines do not interleave mid-line), until r ends.
func copyLines(w io.Writer, r io.Reader) (int64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var n int64
	for {
		b, err := br.ReadSlice('\n')
		if len(b) > 0 {
			m, werr := w.Write(b)
			n += int64(m)
			if werr != nil {
				_, _ = io.Copy(io.Discard, br)
				return n, werr
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
	}
}
