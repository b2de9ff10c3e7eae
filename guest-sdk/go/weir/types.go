// Package weir: the Go-facing side of weir's contract (these types), the
// SDK over it (sdk.go: one plain function per record) and, for
// GOOS=wasip1, the canonical-ABI bindings (abi.go). Everything but abi.go
// and arena.go also builds natively, so `go test` runs transforms.
package weir

type Level uint32

const (
	Trace Level = iota
	Debug
	Info
	Warn
	Error
)

// Log writes one line to the pipeline's log, tagged with the pipeline and
// partition.
func Log(level Level, msg string) { hostLog(level, msg) }

// CounterAdd adds delta to counter name; progress reports and /metrics show it.
func CounterAdd(name string, delta uint64) { hostCounterAdd(name, delta) }

// GaugeSet sets gauge name to value.
func GaugeSet(name string, value float64) { hostGaugeSet(name, value) }

// Batch is the contract's columnar batch: record i's value is
// Values[ValueEnds[i-1]:ValueEnds[i]]; an empty optional column (HasValue,
// KeyEnds/HasKey, HeaderEnds) means the default for every record. Headers
// of record i are Headers[HeaderEnds[i-1]:HeaderEnds[i]].
type Batch struct {
	Partition           uint32
	Values              []byte
	ValueEnds           []uint32
	HasValue            []bool
	Keys                []byte
	KeyEnds             []uint32
	HasKey              []bool
	Headers             []Header
	HeaderEnds          []uint32
	Timestamps, Offsets []int64
}

type BadRecord struct {
	Index  uint32
	Reason string
}

type OutputBatch struct {
	Values     []byte
	ValueEnds  []uint32
	HasValue   []bool
	Keys       []byte
	KeyEnds    []uint32
	HasKey     []bool
	Headers    []Header
	HeaderEnds []uint32
	Timestamps []int64
	Origins    []uint32
	Outputs    []string
	Routes     []uint32
	Rejected   []BadRecord
}

type Header struct {
	Name  string
	Value []byte
}

// Record is one input record. Its byte slices view the batch weir passed
// in and are valid only during the call; they are the call's own, so a
// function may rewrite Value in place (a Map may return it: what a function
// returns is copied into the output), which saves an allocation per record.
type Record struct {
	Key       []byte
	HasKey    bool
	Value     []byte
	HasValue  bool // false for a tombstone
	Headers   []Header
	Timestamp int64
	Partition uint32
	Offset    int64
}

type OutputRecord struct {
	Output       *string
	Key          []byte
	HasKey       bool
	Value        []byte
	HasValue     bool // false writes a tombstone
	Headers      []Header
	Timestamp    int64
	HasTimestamp bool
}

// RecordError: Broken=false is bad-record(msg), Broken=true is broken(msg).
type RecordError struct {
	Broken bool
	Msg    string
}

func (e *RecordError) Error() string { return e.Msg }

// BadRecordError, returned from ProcessBatch, says record Index is bad and
// the batch could not be finished around it: weir retries the records one
// at a time. Any other error means the transform is broken.
type BadRecordError struct {
	Index  uint32
	Reason string
}

func (e *BadRecordError) Error() string { return e.Reason }

// Transform is what a guest implements. Input slices are only valid during the call.
type Transform interface {
	Init(config [][2]string) error
	ProcessBatch(in *Batch) (*OutputBatch, error)
	ProcessRecord(in *Record) ([]OutputRecord, *RecordError)
}

var impl Transform

func SetTransform(t Transform) { impl = t }
