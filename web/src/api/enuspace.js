/*
 * enuspace.js - POST /api/import (apps/server/import_routes.c): an enuSpace page into the
 * pages folder. Resolves to {ok: true, name, files, report} (201) or, when the page cannot be
 * imported, {ok: false, message, report} (422); other failures throw the ApiError.
 */
import {ApiError} from '../api.js';

export async function importEnuspace(api, body) {
  try {
    const {data} = await api.reqFull('POST', '/api/import', body);
    return {ok: true, ...data};
  } catch (e) {
    if (e instanceof ApiError && e.status === 422) {
      return {ok: false, message: e.message, report: e.body.report || null};
    }
    throw e;
  }
}
