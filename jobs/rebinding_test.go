package jobs

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// rebindingDNS is a real DNS server on loopback UDP for one name. Its A answer is a public address until
// rebind is called and 127.0.0.1 after: a name that passes the check when the URL is saved and points
// at the sender's own host when the delivery connects. Answers have a TTL of 0, as an attacker's would.
type rebindingDNS struct {
	conn    net.PacketConn
	name    string // fully qualified, e.g. "rebind.example."
	public  netip.Addr
	rebound atomic.Bool
	queries [2]atomic.Int32 // queries for name answered before and after rebind
}

func newRebindingDNS(t *testing.T, name string, public netip.Addr) *rebindingDNS {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	s := &rebindingDNS{conn: conn, name: name, public: public}
	go s.serve()
	return s
}

func (s *rebindingDNS) rebind() { s.rebound.Store(true) }

// phaseQueries is how many queries for the name the server answered before (phase 0) or after (phase 1)
// rebind.
func (s *rebindingDNS) phaseQueries(phase int) int32 { return s.queries[phase].Load() }

func (s *rebindingDNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			return // closed by the test's cleanup
		}
		if resp, err := s.answer(buf[:n]); err == nil {
			_, _ = s.conn.WriteTo(resp, from)
		}
	}
}

// answer replies to a query for the name with its current A address, or with no records to an AAAA
// query so that only the A answer counts; any other name does not exist.
func (s *rebindingDNS) answer(query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	ours := strings.EqualFold(q.Name.String(), s.name)
	header := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true,
		RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	if !ours {
		header.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, header)
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if ours {
		phase, addr := 0, s.public
		if s.rebound.Load() {
			phase, addr = 1, netip.AddrFrom4([4]byte{127, 0, 0, 1})
		}
		s.queries[phase].Add(1)
		if q.Type == dnsmessage.TypeA {
			if err := b.StartAnswers(); err != nil {
				return nil, err
			}
			rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}
			if err := b.AResource(rh, dnsmessage.AResource{A: addr.As4()}); err != nil {
				return nil, err
			}
		}
	}
	return b.Finish()
}

// useDNSServer points net.DefaultResolver, which both ValidateWebhookURL and the sender's dialer use, at
// addr until the test ends. The test must not run in parallel with others: the resolver is global.
func useDNSServer(t *testing.T, addr string) {
	t.Helper()
	preferGo, dial := net.DefaultResolver.PreferGo, net.DefaultResolver.Dial
	net.DefaultResolver.PreferGo = true // the cgo resolver would ask the system's servers instead
	net.DefaultResolver.Dial = func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}
	t.Cleanup(func() { net.DefaultResolver.PreferGo, net.DefaultResolver.Dial = preferGo, dial })
}

func TestSendRefusesADNSRebindingAfterTheURLWasSaved(t *testing.T) {
	// .example is reserved (RFC 2606) and not special-cased by Go's resolver, unlike .localhost, and the
	// name is not in /etc/hosts, which the resolver reads first.
	const host = "rebind.example"
	public := netip.MustParseAddr("93.184.215.14")
	dns := newRebindingDNS(t, host+".", public)
	useDNSServer(t, dns.conn.LocalAddr().String())

	sink := newWebhookSink(t, status(http.StatusNoContent))
	_, port, _ := net.SplitHostPort(sink.Listener.Addr().String())

	// When the URL is saved the name is public, so the check accepts it.
	if err := ValidateWebhookURL(t.Context(), "https://"+host+":"+port+"/hook", false); err != nil {
		t.Fatalf("ValidateWebhookURL before the rebinding: %v", err)
	}
	if addrs, err := net.DefaultResolver.LookupNetIP(t.Context(), "ip", host); err != nil ||
		!slices.Equal(addrs, []netip.Addr{public}) {
		t.Fatalf("lookup before the rebinding = %v, %v; want [%s]", addrs, err, public)
	}
	if dns.phaseQueries(0) == 0 {
		t.Fatal("the DNS server saw no query before the rebinding")
	}

	// When the delivery connects the name points at loopback: the dialer's guard must refuse it.
	dns.rebind()
	url := "http://" + host + ":" + port + "/hook"
	res := NewWebhookSender(2*time.Second, false).Send(t.Context(), testRequest(url))
	if res.StatusCode != 0 || res.Retryable || !strings.HasPrefix(res.Error, "destination not allowed: ") {
		t.Errorf("result = %+v, want a final refusal", res)
	}
	if n := len(sink.requests()); n != 0 {
		t.Errorf("loopback server received %d requests, want 0", n)
	}
	// Without a fresh query the refusal would not be about the rebound answer.
	if dns.phaseQueries(1) == 0 {
		t.Error("the DNS server saw no query after the rebinding")
	}

	// With private destinations allowed the same URL reaches the loopback server, so the name really
	// resolves to 127.0.0.1 now and the refusal above is the guard's doing.
	if res := NewWebhookSender(2*time.Second, true).Send(t.Context(), testRequest(url)); !res.OK() {
		t.Errorf("with allowPrivate: result = %+v, want success", res)
	}
	if n := len(sink.requests()); n != 1 {
		t.Errorf("loopback server received %d requests with allowPrivate, want 1", n)
	}
}
