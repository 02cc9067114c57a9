// A certificate's subject as ZooKeeper's x509 authentication names it: Java's
// X500Principal.getName(), RFC 2253 — the most specific name first, "," between names with no
// space, the keywords Java knows (CN, C, L, ST, O, OU, STREET, DC, UID) and any other attribute
// as its dotted OID with its DER value in hex ("1.2.840.113549.1.9.1=#16...").
#pragma once

#include <string>

struct x509_st;

namespace warden::server::tls {

std::string java_subject_name(const x509_st* cert);

}  // namespace warden::server::tls
