//go:build !wasip1

package weir

import "fmt"

// Natively (go test) log lines are printed and metrics kept in NativeMetrics.

// NativeMetrics holds what CounterAdd and GaugeSet reported natively.
var NativeMetrics = struct {
	Counters map[string]uint64
	Gauges   map[string]float64
}{map[string]uint64{}, map[string]float64{}}

func hostLog(level Level, msg string) { fmt.Printf("[%d] %s\n", level, msg) }

func hostCounterAdd(name string, delta uint64) { NativeMetrics.Counters[name] += delta }

func hostGaugeSet(name string, value float64) { NativeMetrics.Gauges[name] = value }
