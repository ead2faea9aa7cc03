package netguard

import (
	"net/netip"
)

// addrRange is one block of non-public addresses and the class named in
// refusals.
type addrRange struct {
	prefix netip.Prefix
	class  string
}

func mustPrefixes(pairs ...string) []addrRange {
	out := make([]addrRange, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, addrRange{netip.MustParsePrefix(pairs[i]), pairs[i+1]})
	}
	return out
}

// nonPublicV4 lists the IPv4 blocks that are never a public endpoint. Order
// matters where blocks nest: the first match names the class.
var nonPublicV4 = mustPrefixes(
	"0.0.0.0/32", "unspecified",
	"0.0.0.0/8", "this network",
	"10.0.0.0/8", "private",
	"100.64.0.0/10", "carrier-grade nat",
	"127.0.0.0/8", "loopback",
	"169.254.0.0/16", "link-local",
	"172.16.0.0/12", "private",
	"192.0.0.0/24", "ietf protocol assignments",
	"192.0.2.0/24", "documentation",
	"192.88.99.0/24", "6to4 relay anycast",
	"192.168.0.0/16", "private",
	"198.18.0.0/15", "benchmarking",
	"198.51.100.0/24", "documentation",
	"203.0.113.0/24", "documentation",
	"224.0.0.0/4", "multicast",
	"255.255.255.255/32", "broadcast",
	"240.0.0.0/4", "reserved",
)

// nonPublicV6 lists the IPv6 blocks that are never a public endpoint, checked
// after the forms that embed an IPv4 address. Anything outside 2000::/3
// (global unicast) is refused as well.
var nonPublicV6 = mustPrefixes(
	"::/128", "unspecified",
	"::1/128", "loopback",
	"::/96", "ipv4-compatible",
	"64:ff9b:1::/48", "local-use nat64",
	"100::/64", "discard",
	"2001::/32", "teredo",
	"2001:2::/48", "benchmarking",
	"2001:db8::/32", "documentation",
	"2001::/23", "ietf protocol assignments",
	"3fff::/20", "documentation",
	"fc00::/7", "unique local",
	"fe80::/10", "link-local",
	"fec0::/10", "site-local",
	"ff00::/8", "multicast",
)

var (
	prefixMapped = netip.MustParsePrefix("::ffff:0:0/96")
	prefixNAT64  = netip.MustParsePrefix("64:ff9b::/96")
	prefix6to4   = netip.MustParsePrefix("2002::/16")
	prefixGlobal = netip.MustParsePrefix("2000::/3")
)

// classifyAddr reports whether ip may be dialled as a public endpoint and,
// when it may not, the class of address it is (used in the refusal). IPv6
// forms that carry an IPv4 address (IPv4-mapped, NAT64 64:ff9b::/96, 6to4)
// are judged by the embedded address, so a mapped loopback is as private as
// loopback itself. The local-use NAT64 prefix 64:ff9b:1::/48 and Teredo are
// refused outright: where their embedded IPv4 address sits is not fixed, and
// neither carries a public MCP endpoint.
func classifyAddr(ip netip.Addr) (public bool, why string) {
	if !ip.IsValid() {
		return false, "invalid"
	}
	if ip.Zone() != "" {
		// Only scoped (link-local style) addresses carry zones.
		ip = ip.WithZone("")
		if ok, why := classifyAddr(ip); !ok {
			return false, why
		}
		return false, "scoped"
	}
	if ip.Is4() {
		return classifyV4(ip)
	}
	switch {
	case prefixMapped.Contains(ip):
		return embedded("ipv4-mapped", ip.Unmap())
	case prefixNAT64.Contains(ip):
		b := ip.As16()
		return embedded("nat64", netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	case prefix6to4.Contains(ip):
		b := ip.As16()
		return embedded("6to4", netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
	}
	for _, r := range nonPublicV6 {
		if r.prefix.Contains(ip) {
			return false, r.class
		}
	}
	if !prefixGlobal.Contains(ip) {
		return false, "reserved"
	}
	return true, "public"
}

func classifyV4(ip netip.Addr) (bool, string) {
	for _, r := range nonPublicV4 {
		if r.prefix.Contains(ip) {
			return false, r.class
		}
	}
	return true, "public"
}

// embedded classifies an IPv6 address by the IPv4 address it carries.
func embedded(form string, v4 netip.Addr) (bool, string) {
	if ok, why := classifyV4(v4); !ok {
		return false, form + " " + why
	}
	return true, "public"
}
