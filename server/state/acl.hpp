// Access control as ZooKeeper does it: the schemes world, auth, digest, ip, x509 and sasl; the check of a
// permission against a node's ACL and a connection's authenticated ids; the normalisation of a
// client-supplied ACL (ZooKeeper's fixupACL). One ACL check for the whole server.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "wire/records.hpp"

namespace warden::server {

using AuthIds = std::vector<wire::Id>;

// The digest id ZooKeeper derives from "user:password": user:base64(sha1(user:password)).
std::string digest_id(std::string_view user_colon_password);

// Adds `id` to a connection's ids unless it is there, where ZooKeeper's per-connection set
// (a ConcurrentHashMap of 16 bins) iterates it: by bin of Java's hash of the Id record, then in
// the order added. That order shows in the ACL an "auth" entry expands to and in whoAmI.
// (ZooKeeper's table grows past 12 ids and reorders its bins; more ids keep the 16-bin order.)
void add_auth_id(AuthIds& ids, wire::Id id);

// True when `ids` may do `perm` on a node with `acl`. An empty ACL allows everything, and an
// id of scheme "super" passes every check.
bool acl_allows(const wire::AclList& acl, int32_t perm, const AuthIds& ids);

// The server's permission check: acl_allows, or nothing checked at all under ZooKeeper's
// skipACL (zookeeper.skipACL=yes), which passes every request whatever the node's ACL says.
struct AclCheck {
  bool skip = false;
  bool operator()(const wire::AclList& acl, int32_t perm, const AuthIds& ids) const {
    return skip || acl_allows(acl, perm, ids);
  }
};

// The ACL as stored: duplicates dropped, "auth" expanded to the caller's authenticated ids
// (digest, x509, and sasl with `sasl_scheme`). Empty when the list is empty or an entry is
// malformed (the caller answers InvalidACL). `sasl_scheme`: ZooKeeper's SASL provider is
// configured (authProvider.N=...SASLAuthenticationProvider); without it sasl ids are invalid.
std::vector<wire::Acl> fixup_acl(const wire::AclList& acl, const AuthIds& ids, bool sasl_scheme = false);

// "a.b.c.d", "a.b.c.d/n" or an IPv6 address with an optional prefix length.
bool valid_ip_id(std::string_view id);
bool ip_matches(std::string_view client_address, std::string_view acl_id);

std::string sha1(std::string_view data);
std::string base64(std::string_view data);

}  // namespace warden::server
