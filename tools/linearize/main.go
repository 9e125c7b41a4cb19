// linearize checks a history of client operations for linearizability with Porcupine
// (github.com/anishathalye/porcupine, MIT), against one of the models in models.go.
//
//	linearize --model metadata|log [--timeout 60s] [--html FILE] HISTORY.jsonl
//
// Each line of the history is one operation:
//
//	{"client": 0, "call": NS, "return": NS or null, "kind": "create_topic", "key": "lin-0",
//	 "count": 1, "value": "", "result": "ok", "current": -1, "offset": -1}
//
// "return" null (or "result" "unknown") is an operation whose answer never came. The answer
// is one JSON object on stdout: the result (Ok, Illegal, Unknown when the time ran out), the
// number of operations and keys, and for an illegal history the key that fails and its
// smallest failing sub-history: the shortest prefix of the key's operations (by invocation;
// up to the earliest moment at which it is not linearizable, those answered after that moment
// taken as unanswered), then every operation whose removal leaves it linearizable kept, the others
// removed one at a time. Exit status: 0 Ok, 1 Illegal, 3 Unknown, 2 bad input.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

type line struct {
	Client  int    `json:"client"`
	Call    int64  `json:"call"`
	Return  *int64 `json:"return"`
	Kind    string `json:"kind"`
	Key     string `json:"key"`
	Count   int    `json:"count"`
	Value   string `json:"value"`
	Result  string `json:"result"`
	Current *int   `json:"current"`
	Offset  *int64 `json:"offset"`
}

type answer struct {
	Model      string  `json:"model"`
	Result     string  `json:"result"`
	Operations int     `json:"operations"`
	Keys       int     `json:"keys"`
	FailingKey *string `json:"failing_key"`
	Failing    []line  `json:"failing"`
	FailingAt  *int64  `json:"failing_at"` // the end of the key's shortest failing prefix
}

const never = math.MaxInt64 / 2 // the return time of an unanswered operation

func main() {
	model := flag.String("model", "metadata", "metadata or log")
	timeout := flag.Duration("timeout", 60*time.Second, "time for each check")
	html := flag.String("html", "", "write Porcupine's visualization of a failing key here")
	flag.Parse()
	if flag.NArg() != 1 || (*model != "metadata" && *model != "log") {
		fmt.Fprintln(os.Stderr, "usage: linearize --model metadata|log [--timeout D] [--html F] HISTORY")
		os.Exit(2)
	}
	lines, err := read(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "linearize:", err)
		os.Exit(2)
	}
	m := makeModel(*model)
	byKey := map[string][]line{}
	var keys []string
	for _, l := range lines {
		if _, seen := byKey[l.Key]; !seen {
			keys = append(keys, l.Key)
		}
		byKey[l.Key] = append(byKey[l.Key], l)
	}
	sort.Strings(keys)
	out := answer{Model: *model, Result: string(porcupine.Ok), Operations: len(lines), Keys: len(keys)}
	for _, key := range keys {
		ops := byKey[key]
		sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
		result, _ := check(m, ops, never, *timeout)
		if result == porcupine.Unknown {
			out.Result = string(porcupine.Unknown)
			continue
		}
		if result != porcupine.Illegal {
			continue
		}
		k := key
		out.Result, out.FailingKey = string(porcupine.Illegal), &k
		cut := shortestFailingPrefix(m, ops, *timeout)
		out.FailingAt = &cut
		out.Failing = minimize(m, prefix(ops, cut), *timeout)
		if *html != "" {
			_, info := check(m, out.Failing, never, *timeout)
			if err := porcupine.VisualizePath(m, info, *html); err != nil {
				fmt.Fprintln(os.Stderr, "linearize: visualization:", err)
			}
		}
		break
	}
	json.NewEncoder(os.Stdout).Encode(out)
	switch porcupine.CheckResult(out.Result) {
	case porcupine.Illegal:
		os.Exit(1)
	case porcupine.Unknown:
		os.Exit(3)
	}
}

func read(path string) ([]line, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []line
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; scanner.Scan(); n++ {
		if len(scanner.Bytes()) == 0 {
			continue
		}
		var l line
		if err := json.Unmarshal(scanner.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		if l.Kind == "" || l.Result == "" {
			return nil, fmt.Errorf("%s:%d: an operation needs a kind and a result", path, n)
		}
		lines = append(lines, l)
	}
	return lines, scanner.Err()
}

func makeModel(name string) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} { return []interface{}{topic{}} },
		Step: func(s, i, o interface{}) []interface{} {
			return stepTopic(s.(topic), i.(input), o.(output))
		},
		DescribeOperation: describeOperation,
		DescribeState:     describeState,
	}
	if name == "log" {
		nm.Init = func() []interface{} { return []interface{}{int64(-1)} }
		nm.Step = func(s, i, o interface{}) []interface{} {
			return stepLog(s.(int64), i.(input), o.(output))
		}
	}
	return nm.ToModel()
}

// check runs Porcupine on the operations invoked at or before cut, those answered after it
// taken as unanswered.
func check(m porcupine.Model, ops []line, cut int64, timeout time.Duration) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	history := make([]porcupine.Operation, 0, len(ops))
	for _, l := range ops {
		if l.Call > cut {
			continue
		}
		ret, result := int64(never), "unknown"
		if l.Return != nil && l.Result != "unknown" && *l.Return <= cut {
			ret, result = *l.Return, l.Result
		}
		current, offset := -1, int64(-1)
		if l.Current != nil {
			current = *l.Current
		}
		if l.Offset != nil {
			offset = *l.Offset
		}
		history = append(history, porcupine.Operation{
			ClientId: l.Client,
			Input:    input{Kind: l.Kind, Key: l.Key, Count: l.Count, Value: inputValue(l)},
			Call:     l.Call,
			Output:   output{Result: result, Current: current, Offset: offset, Config: config(l)},
			Return:   ret,
		})
	}
	return porcupine.CheckOperationsVerbose(m, history, timeout)
}

// inputValue and config: a line's value is the value set by alter_config (the principal of
// create_acl and delete_acl), read by read and read_acl.
func inputValue(l line) string {
	if l.Kind == "read" || l.Kind == "read_acl" {
		return ""
	}
	return l.Value
}

func config(l line) string {
	if l.Kind == "read" || l.Kind == "read_acl" {
		return l.Value
	}
	return ""
}

// prefix: the operations invoked at or before cut, those answered after it unanswered.
func prefix(ops []line, cut int64) []line {
	var out []line
	for _, l := range ops {
		if l.Call > cut {
			continue
		}
		if l.Return != nil && *l.Return > cut {
			l.Return, l.Result = nil, "unknown"
		}
		out = append(out, l)
	}
	return out
}

// shortestFailingPrefix: the earliest moment (an invocation or an answer) at which what had
// happened so far is not linearizable. A prefix of a linearizable history (unanswered past
// its moment) is linearizable, so the failing moments are those from some time on: binary
// search over the history's times.
func shortestFailingPrefix(m porcupine.Model, ops []line, timeout time.Duration) int64 {
	var times []int64
	for _, l := range ops {
		times = append(times, l.Call)
		if l.Return != nil {
			times = append(times, *l.Return)
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	lo, hi := 0, len(times)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if r, _ := check(m, ops, times[mid], timeout); r == porcupine.Illegal {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return times[hi]
}

// minimize removes, one at a time, every operation without which the history still fails.
func minimize(m porcupine.Model, ops []line, timeout time.Duration) []line {
	kept := ops
	for i := len(kept) - 1; i >= 0; i-- {
		trial := append(append([]line{}, kept[:i]...), kept[i+1:]...)
		if len(trial) == 0 {
			continue
		}
		if r, _ := check(m, trial, never, timeout); r == porcupine.Illegal {
			kept = trial
		}
	}
	return kept
}
