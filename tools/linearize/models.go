// The sequential models the histories are checked against.
//
// metadata: one topic per key, as a client of the brokers sees it through CreateTopics,
// DeleteTopics, CreatePartitions and IncrementalAlterConfigs. A broker forwards each of them
// to the active controller and sends it again when the connection to the controller drops
// before the answer (Kafka's NodeToControllerChannelManager does), so an answer may be the
// second attempt's, after the first took effect: "already exists" then follows the client's
// own creation, "unknown topic" its own deletion, "invalid partitions" naming the count asked
// its own CreatePartitions. The model allows exactly that and nothing else; an operation
// whose answer never came (a timeout, a lost connection, NOT_CONTROLLER) took effect or not.
//
// A read (at the end of a run, once every broker has caught up) sees the topic as it is.
//
// ACLs: a key of their own names a topic resource no client uses; its state is the set of
// principals with a READ ACL on it (held in Config, sorted and comma-joined). CreateAcls is
// idempotent; DeleteAcls answers with the ACLs it matched (Current), and its resend after
// the first attempt deleted the ACL matches none; read_acl sees the set as it is.
//
// log: client appends to the KRaft log; an append completes when it is committed and its
// answer is the offset of its last record. A log's sequential specification gives each
// append a higher offset than every append before it.
package main

import (
	"fmt"
	"sort"
	"strings"
)

type topic struct {
	Exists     bool
	Partitions int
	Config     string
}

// Input of an operation.
type input struct {
	Kind string // create_topic, delete_topic, create_partitions, alter_config, read, append,
	// create_acl, delete_acl, read_acl
	Key   string
	Count int    // create_topic, create_partitions: the partitions asked for
	Value string // alter_config: the value set
}

// Output of an operation.
type output struct {
	Result  string // ok, exists, unknown_topic, invalid_partitions, unknown (no answer)
	Current int    // invalid_partitions: the count the answer names (-1: not named)
	Offset  int64  // append: the last record's offset
	Config  string // read: the value read
}

func stepTopic(s topic, in input, out output) []interface{} {
	var effect []interface{} // the state after the operation took effect, if it can
	switch in.Kind {
	case "create_topic":
		if !s.Exists {
			effect = []interface{}{topic{true, in.Count, ""}}
		}
	case "delete_topic":
		if s.Exists {
			effect = []interface{}{topic{}}
		}
	case "create_partitions":
		if s.Exists && s.Partitions < in.Count {
			effect = []interface{}{topic{true, in.Count, s.Config}}
		}
	case "alter_config":
		if s.Exists {
			effect = []interface{}{topic{true, s.Partitions, in.Value}}
		}
	case "create_acl":
		effect = []interface{}{topic{Config: withPrincipal(s.Config, in.Value, true)}}
	case "delete_acl":
		if hasPrincipal(s.Config, in.Value) {
			effect = []interface{}{topic{Config: withPrincipal(s.Config, in.Value, false)}}
		}
	}
	unchanged := []interface{}{s}
	if in.Kind == "read_acl" {
		if out.Result == "unknown" || (out.Result == "ok" && s.Config == out.Config) {
			return unchanged
		}
		return nil
	}
	if in.Kind == "delete_acl" && out.Result == "ok" {
		if out.Current > 0 {
			return effect // nil: it matched an ACL that was not there
		}
		if effect == nil {
			return unchanged
		}
		return effect // a resent deletion answered after the first attempt deleted it
	}
	if in.Kind == "read" { // Current: the partitions read (-1: absent), Config: the value
		if out.Result == "unknown" {
			return unchanged
		}
		if out.Result == "ok" && s.Exists == (out.Current >= 0) &&
			(!s.Exists || (s.Partitions == out.Current && s.Config == out.Config)) {
			return unchanged
		}
		return nil
	}
	switch out.Result {
	case "ok":
		return effect
	case "unknown":
		return append(unchanged, effect...)
	case "exists":
		if in.Kind != "create_topic" {
			return nil
		}
		if s.Exists {
			return unchanged
		}
		return effect // a retried creation answered after the first one
	case "unknown_topic":
		if !s.Exists {
			return unchanged
		}
		if in.Kind == "delete_topic" {
			return effect // a retried deletion answered after the first one
		}
		return nil
	case "invalid_partitions":
		if in.Kind != "create_partitions" || !s.Exists {
			return nil
		}
		if s.Partitions >= in.Count && (out.Current < 0 || out.Current == s.Partitions) {
			return unchanged
		}
		if effect != nil && out.Current == in.Count {
			return effect // a retried CreatePartitions answered after the first one
		}
		return nil
	}
	return nil
}

func principals(set string) []string {
	if set == "" {
		return nil
	}
	return strings.Split(set, ",")
}

func hasPrincipal(set, principal string) bool {
	for _, p := range principals(set) {
		if p == principal {
			return true
		}
	}
	return false
}

// withPrincipal: the set with the principal added (or removed), sorted and comma-joined.
func withPrincipal(set, principal string, add bool) string {
	kept := []string{}
	for _, p := range principals(set) {
		if p != principal {
			kept = append(kept, p)
		}
	}
	if add {
		kept = append(kept, principal)
	}
	sort.Strings(kept)
	return strings.Join(kept, ",")
}

func stepLog(last int64, in input, out output) []interface{} {
	switch out.Result {
	case "unknown":
		return []interface{}{last}
	case "ok":
		if out.Offset > last {
			return []interface{}{out.Offset}
		}
	}
	return nil
}

func describeState(s interface{}) string {
	switch v := s.(type) {
	case topic:
		if !v.Exists && v.Config != "" {
			return fmt.Sprintf("ACLs for %s", v.Config)
		}
		if !v.Exists {
			return "absent"
		}
		return fmt.Sprintf("%d partitions, retention.ms=%q", v.Partitions, v.Config)
	case int64:
		return fmt.Sprintf("last offset %d", v)
	}
	return fmt.Sprint(s)
}

func describeOperation(i interface{}, o interface{}) string {
	in, out := i.(input), o.(output)
	switch in.Kind {
	case "create_topic", "create_partitions":
		return fmt.Sprintf("%s(%s, %d) -> %s", in.Kind, in.Key, in.Count, describeOutput(out))
	case "alter_config":
		return fmt.Sprintf("%s(%s, %s) -> %s", in.Kind, in.Key, in.Value, describeOutput(out))
	case "append":
		return fmt.Sprintf("append -> %s", describeOutput(out))
	case "create_acl":
		return fmt.Sprintf("create_acl(%s, %s) -> %s", in.Key, in.Value, describeOutput(out))
	case "delete_acl":
		return fmt.Sprintf("delete_acl(%s, %s) -> %s, %d matched", in.Key, in.Value, out.Result, out.Current)
	case "read_acl":
		return fmt.Sprintf("read_acl(%s) -> %q", in.Key, out.Config)
	case "read":
		if out.Result == "ok" && out.Current < 0 {
			return fmt.Sprintf("read(%s) -> absent", in.Key)
		}
		return fmt.Sprintf("read(%s) -> %d partitions, retention.ms=%q", in.Key, out.Current, out.Config)
	}
	return fmt.Sprintf("%s(%s) -> %s", in.Kind, in.Key, describeOutput(out))
}

func describeOutput(out output) string {
	switch {
	case out.Result == "invalid_partitions" && out.Current >= 0:
		return fmt.Sprintf("invalid_partitions (has %d)", out.Current)
	case out.Result == "ok" && out.Offset >= 0:
		return fmt.Sprintf("ok at offset %d", out.Offset)
	}
	return out.Result
}
