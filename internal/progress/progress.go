// Package progress reports long-running work on stderr: a progress bar with rate and
// ETA when stderr is a terminal, plain periodic lines otherwise (logs, CI).
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Reporter shows the progress of a task with a known total.
type Reporter struct {
	mu       sync.Mutex
	w        io.Writer
	bar      *progressbar.ProgressBar
	desc     string
	total    int64
	start    time.Time
	last     time.Time
	interval time.Duration
}

// New returns a reporter writing to w (a bar if w is a terminal) for total steps.
func New(w io.Writer, desc string, total int64) *Reporter {
	r := &Reporter{w: w, desc: desc, total: total, start: time.Now(), interval: 5 * time.Second}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		r.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	}
	return r
}

// Update sets the number of steps done and an extra status (e.g. "12034 samples").
func (r *Reporter) Update(done int64, status string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bar != nil {
		r.bar.Describe(r.desc + " " + status)
		r.bar.Set64(done)
		return
	}
	now := time.Now()
	if now.Sub(r.last) < r.interval && done < r.total {
		return
	}
	r.last = now
	el := now.Sub(r.start)
	eta := "?"
	if done > 0 {
		eta = (time.Duration(float64(el) / float64(done) * float64(r.total-done))).Round(time.Second).String()
	}
	rate := float64(done) / el.Seconds()
	fmt.Fprintf(r.w, "%s: %d/%d (%.1f/s, eta %s) %s\n", r.desc, done, r.total, rate, eta, status)
}

// Done finishes the bar.
func (r *Reporter) Done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bar != nil {
		r.bar.Finish()
	}
}

// Lazy is a Reporter started by its first Update, for work whose total a library's
// progress callback reports only once it is known. The zero value is not ready: use
// NewLazy.
type Lazy struct {
	w    io.Writer
	desc string
	r    *Reporter
}

// NewLazy returns a Lazy reporter writing to w.
func NewLazy(w io.Writer, desc string) *Lazy { return &Lazy{w: w, desc: desc} }

// Update starts the reporter (with total) if needed and sets the steps done and status.
func (l *Lazy) Update(done, total int64, status string) {
	if l.r == nil {
		l.r = New(l.w, l.desc, total)
	}
	l.r.Update(done, status)
}

// Done finishes the reporter if it started.
func (l *Lazy) Done() {
	if l.r != nil {
		l.r.Done()
	}
}
