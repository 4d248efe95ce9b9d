/**
 * String formats as ECMA-262 patterns for the default mode (compiled by regex.ts like any
 * `pattern`). Each is the strict core of its RFC, so what it admits every validator admits:
 * `date` knows month lengths and leap years, `date-time` wants a time zone, `email` is the
 * dot-atom form, `uri` and `uri-reference` are RFC 3986's grammar (a relative reference's first
 * segment has no `:`). The reference mode keeps llama.cpp's date/time/uuid rules.
 */

const DEC_OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
const IPV4 = `(${DEC_OCTET}\\.){3}${DEC_OCTET}`;
const H16 = "[0-9a-fA-F]{1,4}";
const IPV6 = [
  `(${H16}:){7}${H16}`,
  `(${H16}:){1,7}:`,
  `(${H16}:){1,6}:${H16}`,
  `(${H16}:){1,5}(:${H16}){1,2}`,
  `(${H16}:){1,4}(:${H16}){1,3}`,
  `(${H16}:){1,3}(:${H16}){1,4}`,
  `(${H16}:){1,2}(:${H16}){1,5}`,
  `${H16}:(:${H16}){1,6}`,
  `:((:${H16}){1,7}|:)`,
].join("|");
const LABEL = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
const HOSTNAME = `${LABEL}(\\.${LABEL})*`;
const YEAR = "[0-9]{4}";
const LEAP_YEAR = "([0-9]{2}(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)";
const DATE = `(${YEAR}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))|${LEAP_YEAR}-02-29)`;
const TIME = "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]+)?([zZ]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
const ATOM = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
// RFC 3986, section 3 and 4.1 (IPv4 addresses are reg-names)
const PCT = "%[0-9A-Fa-f]{2}";
const PCHAR = `([A-Za-z0-9._~!$&'()*+,;=:@-]|${PCT})`;
const SEGMENT_NZ_NC = `([A-Za-z0-9._~!$&'()*+,;=@-]|${PCT})+`;
const USERINFO = `([A-Za-z0-9._~!$&'()*+,;=:-]|${PCT})*`;
const REG_NAME = `([A-Za-z0-9._~!$&'()*+,;=-]|${PCT})*`;
const IP_LITERAL = `\\[((${IPV6})|v[0-9A-Fa-f]+\\.[A-Za-z0-9._~!$&'()*+,;=:-]+)\\]`;
const AUTHORITY = `(${USERINFO}@)?(${IP_LITERAL}|${REG_NAME})(:[0-9]*)?`;
const PATH_ABEMPTY = `(/${PCHAR}*)*`;
const PATH_ABSOLUTE = `/(${PCHAR}+(/${PCHAR}*)*)?`;
const QUERY_FRAGMENT = `(\\?(${PCHAR}|[/?])*)?(#(${PCHAR}|[/?])*)?`;
const URI = `[A-Za-z][A-Za-z0-9+.-]*:(//${AUTHORITY}${PATH_ABEMPTY}|${PATH_ABSOLUTE}|${PCHAR}+(/${PCHAR}*)*|)${QUERY_FRAGMENT}`;
const RELATIVE_REF = `(//${AUTHORITY}${PATH_ABEMPTY}|${PATH_ABSOLUTE}|${SEGMENT_NZ_NC}(/${PCHAR}*)*|)${QUERY_FRAGMENT}`;
const DUR_DATE = "([0-9]+Y([0-9]+M)?([0-9]+D)?|[0-9]+M([0-9]+D)?|[0-9]+D)";
const DUR_TIME = "T([0-9]+H([0-9]+M)?([0-9]+S)?|[0-9]+M([0-9]+S)?|[0-9]+S)";

export const FORMAT_PATTERNS: ReadonlyMap<string, string> = new Map([
  ["date", `^${DATE}$`],
  ["time", `^${TIME}$`],
  ["date-time", `^${DATE}[Tt]${TIME}$`],
  ["duration", `^P(${DUR_DATE}(${DUR_TIME})?|${DUR_TIME}|[0-9]+W)$`],
  ["email", `^${ATOM}(\\.${ATOM})*@${HOSTNAME}$`],
  ["hostname", `^${HOSTNAME}$`],
  ["ipv4", `^${IPV4}$`],
  ["ipv6", `^(${IPV6})$`],
  ["uuid", "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"],
  ["uri", `^${URI}$`],
  ["uri-reference", `^(${URI}|${RELATIVE_REF})$`],
]);

/** Formats validators check that have no pattern here: refused (or a warning), never loosened. */
export const UNSUPPORTED_FORMATS: ReadonlySet<string> = new Set([
  "iri",
  "iri-reference",
  "idn-email",
  "idn-hostname",
  "json-pointer",
  "relative-json-pointer",
  "uri-template",
  "regex",
]);
