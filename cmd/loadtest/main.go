// Command loadtest measures a running funnelchat deployment (api + worker on PostgreSQL + Redis, or the
// standalone api) from outside, through its HTTP API and a webhook sink of its own, and prints one JSON
// object with its measurements on stdout; progress and errors go to stderr.
//
//	go run ./cmd/loadtest [flags]
//
// Incoming mode (the default) registers the sink as the account's webhook (PUT /v1/settings/webhook),
// posts --n messages to POST /v1/incoming_custom_channel_message, each from its own fromId, plus
// --duplicates repeats of accepted messageSids, then waits for the bot's replies at the sink, verifies
// every delivery's Standard Webhooks signature, and reports throughput, API and end-to-end latency,
// lost and duplicated replies. Campaign mode (--campaign) creates --contacts contacts, a list and a live
// campaign on it at --per-minute, adds the contacts in one batch and measures the pacing of the opening
// messages at the sink. The sink must be reachable from the worker and, on a loopback or private
// address, the deployment must run with WEBHOOK_ALLOW_PRIVATE=true.
//
// Fill mode (--fill) fills one account to a given size through the public API, so that the data is
// what the service writes (contacts, identities, messages, each conversation's state): --conversations
// senders, each a new contact (a first and last name, most with an email) with a conversation of
// --messages messages, incoming (POST /v1/incoming_custom_channel_message) and the business's reply
// (POST /v1/send_custom_channel_message) in turn, incoming first. --c conversations are filled at once,
// each one's messages in order. It switches the account's bot off (PUT /v1/settings/bot), and leaves it
// off, so that no bot reply adds to the conversations. With --campaign-sends K it then adds the first
// K contacts to a list with a live campaign on it at the highest sendRatePerMinute the API accepts
// (6000), so that the campaign owes K openings; --wait-sends waits for them to be written. Answers 429
// and 503 are retried after their Retry-After, not counted as errors. Run the worker during the fill:
// the outgoing messages are stored either way, but only a running worker delivers them to the sink (the
// tool waits up to --wait after the last message for every one), and campaign openings need it. With
// the worker stopped, give --no-replies: no sink is registered, the replies stay pending, and a worker
// started later delivers them to the account's webhook (a new account has none: they end failed). See
// docs/performance.md, "Filling an account".
//
// Flags:
//
//	--url URL          the api's base address (default http://127.0.0.1:8080); endpoints are under /v1
//	--key KEY          an API key; without it --admin creates a fresh account for the run
//	--admin CMD        the admin CLI, a binary path or "go run ./cmd/admin", run with this environment
//	                   (it needs DATABASE_URL) as: CMD account create --email loadtest-<unix nanos>@example.com
//	                   --rate-limit 1000000 (the largest per-key limit it accepts)
//	--n N              incoming messages to post (default 2000)
//	--c N              closed loop: requests in flight, each worker sending as soon as its last answer came (default 64)
//	--rate R           open loop: start R requests per second (duplicates included) whatever the answers;
//	                   0 (default) is the closed loop
//	--max-in-flight N  open loop: at most N requests at once (default 1024); a request that has to wait
//	                   keeps its scheduled start, so the wait counts in its latency
//	--duplicates F     fraction 0..1 of N sent once more, each right after its original was accepted
//	--no-replies       expect no replies (worker stopped): no sink, no webhook, no waiting; in fill
//	                   mode, no deliveries
//	--wait D           how long to wait for replies after the last answer (default 60s); ends early
//	                   when every accepted message has one; in fill mode, for the sink to receive
//	                   every reply posted
//	--settle D         once everything expected arrived, how much longer to listen for duplicates (default 2s)
//	--sink-addr A      where the sink listens (default 127.0.0.1:0)
//	--sink-url U       the URL the deployment should call (default http://<sink address>/hook)
//	--api-pid P        repeatable or comma-separated: api processes whose peak RSS to report
//	--worker-pid P     likewise for worker processes
//	--reset-peak-rss   reset those processes' VmHWM at the start (/proc/<pid>/clear_refs), so that
//	                   peakRssMB covers this run, not the process's life so far
//	--postgres-pid P   incoming mode: PostgreSQL's postmaster, whose CPU (with every backend's) to report
//	--redis-pid P      incoming mode: Redis, whose CPU to report
//	--campaign         campaign mode
//	--contacts N       campaign mode: contacts to add in one batch (default 50, at most 1000)
//	--per-minute N     campaign mode: the campaign's sendRatePerMinute (default 60)
//	--timeout D        campaign mode: wait for the openings at most D after the batch add
//	                   (default contacts/per-minute minutes + 60s)
//	--fill             fill mode
//	--conversations N  fill mode: senders, each a contact with one conversation (default 1000)
//	--messages M       fill mode: messages per conversation, incoming first, then replies and
//	                   incoming in turn (default 5)
//	--campaign-sends K fill mode: contacts (the first K) to add to a live campaign's list (default 0)
//	--wait-sends       fill mode: wait until the campaign has written every opening (none queued or
//	                   pending), up to K/6000 minutes plus --wait
//	--run-id S         the run's id in messageSids, fromIds, names (default the start time in base 36)
//
// Incoming output: mode, runId, n, concurrency, offeredRate, requests, durationSeconds,
// acceptedPerSecond, apiLatencyMs, maxStartLagMs (open loop), errorsByStatus, accepted,
// duplicatesSent, duplicatesAnsweredCorrectly and, with replies, replies, repliesPerSecond,
// repliesPerSecondOverRun, endToEndLatencyFromRequestStartMs, replyLatencyFromAcceptMs, lostReplies,
// duplicatedReplies, badSignatures, deliveries, repliesToUnaccepted, foreignDeliveries, waitSeconds.
// Campaign output: see campaignReport. Fill output: mode, runId, conversations,
// messagesPerConversation, concurrency, messagesPosted, incoming, outgoing, campaignSends,
// durationSeconds, messagesPerSecond, apiLatencyMs, errorsByStatus, retries, listId, campaignId,
// campaignSendsByStatus, deliveries, badSignatures, undelivered, otherDeliveries, waitSeconds (see
// fillReport in fill.go). With pids: peakRssMB (sum of each process's VmHWM from
// /proc/<pid>/status at the end), sampledPeakRssMB (largest sum of VmRSS seen, sampled every 200 ms)
// and rssProcesses, in MiB (the kernel's kB / 1024). VmHWM is the peak since the process started (or
// since --reset-peak-rss), so a second run against the same process may report the first run's peak.
// Incoming mode, with any pid: cpuSeconds and cpuMsPerMessage (per accepted message) of the api,
// worker, postgres and redis processes given and of the tool itself, from the start of the load to the
// end of the run (cpu.go).
// Latency summaries are {count, min, p50, p95, p99, max, mean} in ms: exact nearest-rank percentiles
// over every sample. Each field's exact definition is the comment on it in incoming.go, campaign.go,
// fill.go and rss.go.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// options are the command line.
type options struct {
	URL, Key, Admin     string
	N, Concurrency      int
	Rate                float64
	MaxInFlight         int
	Duplicates          float64
	NoReplies           bool
	Wait, Settle        time.Duration
	SinkAddr, SinkURL   string
	APIPIDs, WorkerPIDs pidsFlag
	PostgresPIDs        pidsFlag
	RedisPIDs           pidsFlag
	ResetPeakRSS        bool
	Campaign            bool
	Contacts, PerMinute int
	Timeout             time.Duration
	Fill                bool
	Conversations       int
	Messages            int
	CampaignSends       int
	WaitSends           bool
	RunID               string
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.URL, "url", "http://127.0.0.1:8080", "the api's base address")
	fs.StringVar(&o.Key, "key", "", "API key (default: create an account with --admin)")
	fs.StringVar(&o.Admin, "admin", "", `admin CLI command, e.g. ./admin or "go run ./cmd/admin"`)
	fs.IntVar(&o.N, "n", 2000, "incoming messages to post")
	fs.IntVar(&o.Concurrency, "c", 64, "closed-loop concurrency")
	fs.Float64Var(&o.Rate, "rate", 0, "open-loop requests per second (0: closed loop)")
	fs.IntVar(&o.MaxInFlight, "max-in-flight", 1024, "open loop: most requests at once")
	fs.Float64Var(&o.Duplicates, "duplicates", 0, "fraction 0..1 of messages repeated after acceptance")
	fs.BoolVar(&o.NoReplies, "no-replies", false, "expect no replies (worker stopped)")
	fs.DurationVar(&o.Wait, "wait", 60*time.Second, "wait for replies after the last answer")
	fs.DurationVar(&o.Settle, "settle", 2*time.Second, "listen this much longer for duplicates once all arrived")
	fs.StringVar(&o.SinkAddr, "sink-addr", "127.0.0.1:0", "webhook sink listen address")
	fs.StringVar(&o.SinkURL, "sink-url", "", "webhook URL to register (default http://<sink address>/hook)")
	fs.Var(&o.APIPIDs, "api-pid", "api process id (repeatable, comma-separated)")
	fs.Var(&o.WorkerPIDs, "worker-pid", "worker process id (repeatable, comma-separated)")
	fs.BoolVar(&o.ResetPeakRSS, "reset-peak-rss", false, "reset the processes' VmHWM at the start")
	fs.Var(&o.PostgresPIDs, "postgres-pid", "PostgreSQL's postmaster process id, for its CPU and its backends'")
	fs.Var(&o.RedisPIDs, "redis-pid", "Redis process id, for its CPU")
	fs.BoolVar(&o.Campaign, "campaign", false, "campaign mode")
	fs.IntVar(&o.Contacts, "contacts", 50, "campaign mode: contacts")
	fs.IntVar(&o.PerMinute, "per-minute", 60, "campaign mode: sendRatePerMinute")
	fs.DurationVar(&o.Timeout, "timeout", 0, "campaign mode: longest wait for the openings (default contacts/per-minute min + 60s)")
	fs.BoolVar(&o.Fill, "fill", false, "fill mode")
	fs.IntVar(&o.Conversations, "conversations", 1000, "fill mode: senders, one conversation each")
	fs.IntVar(&o.Messages, "messages", 5, "fill mode: messages per conversation (incoming first, then in turn)")
	fs.IntVar(&o.CampaignSends, "campaign-sends", 0, "fill mode: contacts to add to a live campaign's list")
	fs.BoolVar(&o.WaitSends, "wait-sends", false, "fill mode: wait until the campaign has written every opening")
	fs.StringVar(&o.RunID, "run-id", "", "run id (default: start time in base 36)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.Key == "" && o.Admin == "":
		return nil, errors.New("give --key, or --admin to create an account")
	case o.N < 1 || o.Concurrency < 1 || o.MaxInFlight < 1:
		return nil, errors.New("--n, --c and --max-in-flight must be at least 1")
	case o.Rate < 0:
		return nil, errors.New("--rate must not be negative")
	case o.Duplicates < 0 || o.Duplicates > 1:
		return nil, errors.New("--duplicates must be from 0 to 1")
	case o.Campaign && (o.Contacts < 1 || o.Contacts > maxCampaignContacts || o.PerMinute < 1):
		return nil, fmt.Errorf("--contacts must be from 1 to %d and --per-minute at least 1", maxCampaignContacts)
	case o.Fill && (o.Campaign || o.Rate > 0):
		return nil, errors.New("--fill runs alone, in a closed loop: not with --campaign or --rate")
	case o.Fill && (o.Conversations < 1 || o.Messages < 1):
		return nil, errors.New("--conversations and --messages must be at least 1")
	case o.Fill && (o.CampaignSends < 0 || o.CampaignSends > o.Conversations):
		return nil, errors.New("--campaign-sends must be from 0 to --conversations")
	case o.WaitSends && (!o.Fill || o.CampaignSends == 0 || o.NoReplies):
		return nil, errors.New("--wait-sends needs --fill, --campaign-sends and a running worker (not --no-replies)")
	}
	if o.RunID == "" {
		o.RunID = strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	report, err := run(ctx, o, os.Stderr)
	if report != nil {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(report)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

// run gets a key, starts the memory sampler and runs the mode; the report may come with an error
// when the run was interrupted.
func run(ctx context.Context, o *options, progress io.Writer) (any, error) {
	healthCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := waitHealthy(healthCtx, o.URL); err != nil {
		return nil, err
	}
	key := o.Key
	if key == "" {
		acc, err := createAccount(ctx, o.Admin, fmt.Sprintf("loadtest-%d@example.com", time.Now().UnixNano()))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(progress, "loadtest: created account %s (%s)\n", acc.AccountID, acc.Email)
		key = acc.APIKey
	}
	conns := o.Concurrency
	if o.Rate > 0 {
		conns = o.MaxInFlight
	}
	api := newClient(o.URL, key, conns)
	if o.ResetPeakRSS {
		for _, pid := range append(append([]int(nil), o.APIPIDs...), o.WorkerPIDs...) {
			if err := resetPeakRSS(pid); err != nil {
				return nil, fmt.Errorf("reset peak RSS of %d: %w", pid, err)
			}
		}
	}
	sampler := startRSSSampler(o.APIPIDs, o.WorkerPIDs)
	stopSampler := func() *memoryReport {
		if sampler == nil {
			return nil
		}
		return sampler.Stop()
	}

	if o.Fill {
		rep, err := runFill(ctx, fillConfig{
			API: api, RunID: o.RunID, Conversations: o.Conversations, Messages: o.Messages,
			CampaignSends: o.CampaignSends, Concurrency: o.Concurrency, WaitSends: o.WaitSends,
			NoReplies: o.NoReplies, Wait: o.Wait, SinkAddr: o.SinkAddr, SinkURL: o.SinkURL, Progress: progress,
		})
		if rep != nil {
			rep.memoryReport = stopSampler()
			return rep, err
		}
		stopSampler()
		return nil, err
	}
	if o.Campaign {
		rep, err := runCampaign(ctx, campaignConfig{
			API: api, RunID: o.RunID, Contacts: o.Contacts, PerMinute: o.PerMinute, Timeout: o.Timeout,
			Settle: o.Settle, SinkAddr: o.SinkAddr, SinkURL: o.SinkURL, Progress: progress,
		})
		if rep != nil {
			rep.memoryReport = stopSampler()
			return rep, err
		}
		stopSampler()
		return nil, err
	}
	var cpu *cpuMeter
	if len(o.APIPIDs)+len(o.WorkerPIDs)+len(o.PostgresPIDs)+len(o.RedisPIDs) > 0 {
		cpu = startCPUMeter(cpuRole{name: "api", pids: o.APIPIDs}, cpuRole{name: "worker", pids: o.WorkerPIDs},
			cpuRole{name: "postgres", pids: o.PostgresPIDs, tree: true}, cpuRole{name: "redis", pids: o.RedisPIDs})
	}
	rep, err := runIncoming(ctx, incomingConfig{
		API: api, RunID: o.RunID, N: o.N, Concurrency: o.Concurrency, Rate: o.Rate, MaxInFlight: o.MaxInFlight,
		Duplicates: o.Duplicates, NoReplies: o.NoReplies, Wait: o.Wait, Settle: o.Settle,
		SinkAddr: o.SinkAddr, SinkURL: o.SinkURL, Progress: progress,
	})
	if rep != nil {
		rep.memoryReport = stopSampler()
		if cpu != nil {
			rep.cpuReport = cpu.Stop(rep.Accepted)
		}
		return rep, err
	}
	stopSampler()
	return nil, err
}
