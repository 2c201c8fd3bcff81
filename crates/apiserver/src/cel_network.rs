//! kube-apiserver's IP and CIDR libraries for validation rules: `ip('10.0.0.1')`, `isIP(s)`,
//! `ip.isCanonical(s)`, an address's `family()`, `isUnspecified()`, `isLoopback()`,
//! `isLinkLocalMulticast()`, `isLinkLocalUnicast()`, `isGlobalUnicast()`; `cidr('10.0.0.0/8')`,
//! `isCIDR(s)`, a network's `containsIP(ip|string)`, `containsCIDR(cidr|string)`, `ip()`,
//! `masked()`, `prefixLength()`; `string()` of either.
//!
//! Invariants: addresses read as Go's `netip` reads them, and kube's refusals hold: an address
//! with a zone or an IPv4-mapped IPv6 address is an error, in kube's words. A network keeps the
//! address it was written with (`masked()` clears the host bits), so two networks are equal when
//! both their address and their length are.

use std::net::IpAddr;
use std::sync::Arc;

use cel::common::types::{STRING_TYPE, Type};
use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value as Cel};

use crate::cel_library::{arg, give, string_arg};

const IP_NAME: &str = "net.IP";
const CIDR_NAME: &str = "net.CIDR";

/// An IP address.
#[derive(Debug, PartialEq, Eq)]
struct Ip(IpAddr);

impl Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        IP_NAME
    }
}

/// A network: an address and a prefix length.
#[derive(Debug, PartialEq, Eq)]
struct Cidr(IpAddr, u8);

impl Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        CIDR_NAME
    }
}

/// Adds the libraries to `env`.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let ip = || Type::new_opaque_type(IP_NAME);
    let cidr = || Type::new_opaque_type(CIDR_NAME);
    env.add_overload("ip", "string_to_ip", vec![STRING_TYPE], to_ip)?;
    env.add_overload("isIP", "is_ip", vec![STRING_TYPE], is_ip)?;
    env.add_overload("ip.isCanonical", "ip_is_canonical", vec![STRING_TYPE], is_canonical)?;
    env.add_overload("string", "ip_to_string", vec![ip()], to_string)?;
    env.add_member_overload("family", "ip_family", ip(), vec![], family)?;
    env.add_member_overload("isUnspecified", "ip_is_unspecified", ip(), vec![], is_unspecified)?;
    env.add_member_overload("isLoopback", "ip_is_loopback", ip(), vec![], is_loopback)?;
    env.add_member_overload(
        "isLinkLocalMulticast",
        "ip_is_link_local_multicast",
        ip(),
        vec![],
        is_link_local_multicast,
    )?;
    env.add_member_overload("isLinkLocalUnicast", "ip_is_link_local_unicast", ip(), vec![], is_link_local_unicast)?;
    env.add_member_overload("isGlobalUnicast", "ip_is_global_unicast", ip(), vec![], is_global_unicast)?;
    env.add_overload("cidr", "string_to_cidr", vec![STRING_TYPE], to_cidr)?;
    env.add_overload("isCIDR", "is_cidr", vec![STRING_TYPE], is_cidr)?;
    env.add_overload("string", "cidr_to_string", vec![cidr()], to_string)?;
    env.add_member_overload("containsIP", "cidr_contains_ip_ip", cidr(), vec![ip()], contains_ip)?;
    env.add_member_overload("containsIP", "cidr_contains_ip_string", cidr(), vec![STRING_TYPE], contains_ip)?;
    env.add_member_overload("containsCIDR", "cidr_contains_cidr", cidr(), vec![cidr()], contains_cidr)?;
    env.add_member_overload("containsCIDR", "cidr_contains_cidr_string", cidr(), vec![STRING_TYPE], contains_cidr)?;
    env.add_member_overload("ip", "cidr_ip", cidr(), vec![], cidr_ip)?;
    env.add_member_overload("masked", "cidr_masked", cidr(), vec![], masked)?;
    env.add_member_overload("prefixLength", "cidr_prefix_length", cidr(), vec![], prefix_length)?;
    Ok(())
}

/// An address as kube's CEL library reads it: Go's `netip.ParseAddr`, without zones or
/// IPv4-mapped IPv6 addresses.
fn parse_ip(raw: &str) -> Result<IpAddr, String> {
    let (addr, zone) = raw.split_once('%').map_or((raw, None), |(a, z)| (a, Some(z)));
    let parsed: IpAddr = addr.parse().map_err(|_| {
        format!("IP Address {raw:?} parse error during conversion from string: ParseAddr({raw:?}): unable to parse IP")
    })?;
    if zone.is_some() {
        return Err(format!("IP address {raw:?} with zone value is not allowed"));
    }
    if let IpAddr::V6(v6) = parsed
        && v6.to_ipv4_mapped().is_some()
    {
        return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
    }
    Ok(parsed)
}

/// A network as kube's CEL library reads it: Go's `netip.ParsePrefix`, without IPv4-mapped
/// IPv6 addresses.
fn parse_cidr(raw: &str) -> Result<(IpAddr, u8), String> {
    let wrap = |e: String| format!("network address parse error during conversion from string: {e}");
    let Some((addr, bits)) = raw.split_once('/') else {
        return Err(wrap(format!("netip.ParsePrefix({raw:?}): no '/'")));
    };
    let parsed: IpAddr = addr
        .parse()
        .map_err(|_| wrap(format!("netip.ParsePrefix({raw:?}): ParseAddr({addr:?}): unable to parse IP")))?;
    let max = if parsed.is_ipv4() { 32 } else { 128 };
    let length: u8 = match bits.parse::<u8>() {
        Ok(b) if bits.len() == 1 || !bits.starts_with('0') && bits.bytes().all(|c| c.is_ascii_digit()) => b,
        _ => return Err(wrap(format!("netip.ParsePrefix({raw:?}): bad bits after slash: {bits:?}"))),
    };
    if length > max {
        return Err(wrap(format!("netip.ParsePrefix({raw:?}): prefix length out of range")));
    }
    if let IpAddr::V6(v6) = parsed
        && v6.to_ipv4_mapped().is_some()
    {
        return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
    }
    Ok((parsed, length))
}

/// `addr` with all but its first `length` bits cleared.
fn mask(addr: IpAddr, length: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let keep = if length == 0 { 0 } else { u32::MAX << (32 - u32::from(length)) };
            IpAddr::V4((u32::from(a) & keep).into())
        }
        IpAddr::V6(a) => {
            let keep = if length == 0 { 0 } else { u128::MAX << (128 - u32::from(length)) };
            IpAddr::V6((u128::from(a) & keep).into())
        }
    }
}

/// The argument at `i` as an address: an IP, or a string that reads as one.
fn ip_arg(args: &[CowVal<'_, '_>], i: usize, function: &str) -> Result<IpAddr, ExecutionError> {
    match arg(args, i)? {
        Cel::Opaque(o) => o.downcast_ref::<Ip>().map(|ip| ip.0),
        Cel::String(s) => return parse_ip(&s).map_err(|e| ExecutionError::function_error(function, e)),
        _ => None,
    }
    .ok_or_else(|| ExecutionError::function_error(function, "expected an IP address"))
}

/// The argument at `i` as a network: a CIDR, or a string that reads as one.
fn cidr_arg(args: &[CowVal<'_, '_>], i: usize, function: &str) -> Result<(IpAddr, u8), ExecutionError> {
    match arg(args, i)? {
        Cel::Opaque(o) => o.downcast_ref::<Cidr>().map(|c| (c.0, c.1)),
        Cel::String(s) => return parse_cidr(&s).map_err(|e| ExecutionError::function_error(function, e)),
        _ => None,
    }
    .ok_or_else(|| ExecutionError::function_error(function, "expected a CIDR"))
}

fn to_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    match parse_ip(&string_arg(&args, 0, "ip")?) {
        Ok(a) => give(Cel::Opaque(Arc::new(Ip(a)))),
        Err(e) => Err(ExecutionError::function_error("ip", e)),
    }
}

fn is_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Bool(parse_ip(&string_arg(&args, 0, "isIP")?).is_ok()))
}

fn is_canonical<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let raw = string_arg(&args, 0, "ip.isCanonical")?;
    match parse_ip(&raw) {
        Ok(a) => give(Cel::Bool(a.to_string() == raw)),
        Err(e) => Err(ExecutionError::function_error("ip.isCanonical", e)),
    }
}

fn to_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let text = match arg(&args, 0)? {
        Cel::Opaque(o) => match (o.downcast_ref::<Ip>(), o.downcast_ref::<Cidr>()) {
            (Some(ip), _) => ip.0.to_string(),
            (_, Some(c)) => format!("{}/{}", c.0, c.1),
            _ => return Err(ExecutionError::function_error("string", "expected an IP address or a CIDR")),
        },
        _ => return Err(ExecutionError::function_error("string", "expected an IP address or a CIDR")),
    };
    give(Cel::String(Arc::new(text)))
}

fn family<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Int(if ip_arg(&args, 0, "family")?.is_ipv4() { 4 } else { 6 }))
}

/// An address test, as Go's `netip.Addr` answers it.
fn test<'b, 'v>(
    args: &[CowVal<'b, 'v>],
    function: &str,
    t: fn(IpAddr) -> bool,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Bool(t(ip_arg(args, 0, function)?)))
}

fn is_unspecified<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    test(&args, "isUnspecified", |a| a.is_unspecified())
}

fn is_loopback<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    test(&args, "isLoopback", |a| a.is_loopback())
}

fn link_local_multicast(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

fn is_link_local_multicast<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    test(&args, "isLinkLocalMulticast", link_local_multicast)
}

fn link_local_unicast(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => v4.octets()[..2] == [169, 254],
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

fn is_link_local_unicast<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    test(&args, "isLinkLocalUnicast", link_local_unicast)
}

/// Go's `IsGlobalUnicast`: neither unspecified, loopback, multicast, link-local unicast nor
/// the IPv4 broadcast address (private ranges are global unicast).
pub(crate) fn global_unicast(a: IpAddr) -> bool {
    let broadcast = matches!(a, IpAddr::V4(v4) if v4.is_broadcast());
    !(a.is_unspecified() || a.is_loopback() || a.is_multicast() || link_local_unicast(a) || broadcast)
}

fn is_global_unicast<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    test(&args, "isGlobalUnicast", global_unicast)
}

fn to_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    match parse_cidr(&string_arg(&args, 0, "cidr")?) {
        Ok((a, l)) => give(Cel::Opaque(Arc::new(Cidr(a, l)))),
        // kube wraps the parser's error once more.
        Err(e) => Err(ExecutionError::function_error(
            "cidr",
            format!("network address parse error during conversion from string: {e}"),
        )),
    }
}

fn is_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Bool(parse_cidr(&string_arg(&args, 0, "isCIDR")?).is_ok()))
}

fn contains_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (net, length) = cidr_arg(&args, 0, "containsIP")?;
    let ip = ip_arg(&args, 1, "containsIP")?;
    give(Cel::Bool(net.is_ipv4() == ip.is_ipv4() && mask(ip, length) == mask(net, length)))
}

fn contains_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (net, length) = cidr_arg(&args, 0, "containsCIDR")?;
    let (other, other_length) = cidr_arg(&args, 1, "containsCIDR")?;
    let same = net.is_ipv4() == other.is_ipv4() && mask(other, length) == mask(net, length);
    give(Cel::Bool(same && length <= other_length))
}

fn cidr_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (net, _) = cidr_arg(&args, 0, "ip")?;
    give(Cel::Opaque(Arc::new(Ip(net))))
}

fn masked<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (net, length) = cidr_arg(&args, 0, "masked")?;
    give(Cel::Opaque(Arc::new(Cidr(mask(net, length), length))))
}

fn prefix_length<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    give(Cel::Int(i64::from(cidr_arg(&args, 0, "prefixLength")?.1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(expr: &str) -> Result<Cel, ExecutionError> {
        crate::cel_library::eval_with(register, expr)
    }

    fn is_true(expr: &str) {
        assert_eq!(eval(expr), Ok(Cel::Bool(true)), "{expr}");
    }

    fn error(expr: &str) -> String {
        match eval(expr) {
            Err(ExecutionError::FunctionError { message, .. }) => message,
            other => panic!("{expr}: {other:?}"),
        }
    }

    #[test]
    fn addresses() {
        is_true("isIP('10.0.0.1') && isIP('::1') && !isIP('10.0.0') && !isIP('fe80::1%eth0')");
        is_true("ip('10.0.0.1').family() == 4 && ip('2001:db8::1').family() == 6");
        is_true("ip('127.0.0.1') == ip('127.0.0.1') && ip('127.0.0.1') != ip('127.0.0.2')");
        is_true("ip.isCanonical('2001:db8::1') && !ip.isCanonical('2001:DB8::1')");
        is_true("string(ip('2001:db8:0:0::1')) == '2001:db8::1'");
        is_true("ip('0.0.0.0').isUnspecified() && ip('::1').isLoopback() && ip('127.0.0.1').isLoopback()");
        is_true(
            "ip('224.0.0.1').isLinkLocalMulticast() && ip('ff02::1').isLinkLocalMulticast() && !ip('224.0.1.1').isLinkLocalMulticast()",
        );
        is_true(
            "ip('169.254.0.1').isLinkLocalUnicast() && ip('fe80::1').isLinkLocalUnicast() && !ip('fd80::1').isLinkLocalUnicast()",
        );
        is_true(
            "ip('192.168.0.1').isGlobalUnicast() && !ip('255.255.255.255').isGlobalUnicast() && !ip('ff00::1').isGlobalUnicast()",
        );
        assert_eq!(
            error("ip('fe80::1%eth0') == ip('::1')"),
            "IP address \"fe80::1%eth0\" with zone value is not allowed"
        );
        assert_eq!(
            error("ip('::ffff:1.2.3.4') == ip('::1')"),
            "IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed"
        );
        assert_eq!(
            error("ip('nope') == ip('::1')"),
            "IP Address \"nope\" parse error during conversion from string: ParseAddr(\"nope\"): unable to parse IP"
        );
    }

    #[test]
    fn networks() {
        is_true("isCIDR('10.0.0.0/8') && isCIDR('2001:db8::/32') && !isCIDR('10.0.0.0') && !isCIDR('10.0.0.0/33')");
        is_true("cidr('10.0.0.0/8').containsIP(ip('10.1.2.3')) && cidr('10.0.0.0/8').containsIP('10.1.2.3')");
        is_true("!cidr('10.0.0.0/8').containsIP('11.0.0.1') && !cidr('::/0').containsIP('10.0.0.1')");
        is_true("cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16') && !cidr('10.1.0.0/16').containsCIDR('10.0.0.0/8')");
        is_true("cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8') && cidr('10.1.2.3/8') != cidr('10.0.0.0/8')");
        is_true("cidr('10.1.2.3/8').ip() == ip('10.1.2.3') && cidr('10.0.0.0/8').prefixLength() == 8");
        is_true("string(cidr('2001:db8::/32')) == '2001:db8::/32'");
        assert_eq!(
            error("cidr('10.0.0.0') == cidr('10.0.0.0/8')"),
            "network address parse error during conversion from string: \
             network address parse error during conversion from string: netip.ParsePrefix(\"10.0.0.0\"): no '/'"
        );
    }
}
