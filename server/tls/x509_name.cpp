#include "server/tls/x509_name.hpp"

#include <openssl/asn1.h>
#include <openssl/objects.h>
#include <openssl/x509.h>

#include <vector>

namespace warden::server::tls {

namespace {
const char* java_keyword(int nid) {
  switch (nid) {
    case NID_commonName: return "CN";
    case NID_countryName: return "C";
    case NID_localityName: return "L";
    case NID_stateOrProvinceName: return "ST";
    case NID_organizationName: return "O";
    case NID_organizationalUnitName: return "OU";
    case NID_streetAddress: return "STREET";
    case NID_domainComponent: return "DC";
    case NID_userId: return "UID";
    default: return nullptr;
  }
}

// RFC 2253's escapes: the special characters, a leading '#' or space, a trailing space.
std::string escaped(const std::string& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    char ch = v[i];
    bool special = ch == ',' || ch == '+' || ch == '"' || ch == '\\' || ch == '<' || ch == '>' || ch == ';' ||
                   (i == 0 && (ch == '#' || ch == ' ')) || (i + 1 == v.size() && ch == ' ');
    if (special) out += '\\';
    out += ch;
  }
  return out;
}

std::string hex_der(const ASN1_STRING* value) {
  ASN1_TYPE* t = ASN1_TYPE_new();
  std::string out;
  if (t && ASN1_TYPE_set1(t, ASN1_STRING_type(value), value)) {
    unsigned char* der = nullptr;
    int n = i2d_ASN1_TYPE(t, &der);
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < n; ++i) {
      out += digits[der[i] >> 4];
      out += digits[der[i] & 15];
    }
    OPENSSL_free(der);
  }
  ASN1_TYPE_free(t);
  return "#" + out;
}

std::string attribute(const X509_NAME_ENTRY* e) {
  const ASN1_OBJECT* obj = X509_NAME_ENTRY_get_object(e);
  const ASN1_STRING* value = X509_NAME_ENTRY_get_data(e);
  if (const char* k = java_keyword(OBJ_obj2nid(obj))) {
    unsigned char* utf8 = nullptr;
    int n = ASN1_STRING_to_UTF8(&utf8, value);
    std::string v = n >= 0 ? std::string(reinterpret_cast<char*>(utf8), static_cast<size_t>(n)) : std::string();
    OPENSSL_free(utf8);
    return std::string(k) + "=" + escaped(v);
  }
  char oid[128];
  OBJ_obj2txt(oid, sizeof oid, obj, 1);
  return std::string(oid) + "=" + hex_der(value);
}
}  // namespace

std::string java_subject_name(const x509_st* cert) {
  const X509_NAME* name = X509_get_subject_name(cert);
  int count = X509_NAME_entry_count(name);
  // Relative names in the certificate's order, each a set of attributes.
  std::vector<std::vector<std::string>> rdns;
  int last_set = -1;
  for (int i = 0; i < count; ++i) {
    const X509_NAME_ENTRY* e = X509_NAME_get_entry(name, i);
    int set = X509_NAME_ENTRY_set(e);
    if (set != last_set || rdns.empty()) rdns.emplace_back();
    last_set = set;
    rdns.back().push_back(attribute(e));
  }
  std::string out;
  for (auto it = rdns.rbegin(); it != rdns.rend(); ++it) {
    if (!out.empty()) out += ',';
    for (size_t j = 0; j < it->size(); ++j) out += (j ? "+" : "") + (*it)[j];
  }
  return out;
}

}  // namespace warden::server::tls
