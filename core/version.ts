/** tubeway's own version (stats reports the protocol level, "1.12"). */
export const VERSION = "0.1.0";
