/** The channel name the AG-UI endpoint uses for its inbound messages. */
export const WEB_CHANNEL = 'web';

/** The AG-UI `code` sent in RUN_ERROR when the failure is not a `PalaverError`. */
export const INTERNAL_ERROR_CODE = 'internal_error';
